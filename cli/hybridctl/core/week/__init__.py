"""The plan's week: segments, the clock, what runs when, and a pool's machines in a segment."""
