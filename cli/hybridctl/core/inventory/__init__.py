"""The inventory: the one input a user writes (spec/inventory-v1.md)."""
