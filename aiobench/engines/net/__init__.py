"""Netbench (``--netbench``): elbencho's request/response network benchmark over TCP."""
