"""What a run will do, decided before any clock starts: targets, op streams, dir layout,
memory, slots; pure."""
