"""The backends (fio's ioengine_ops): each engine probes, opens, runs and closes its targets."""
