"""What a run will do, decided before any clock starts: targets, their layout and its op
streams, the memory the slots will take; pure."""
