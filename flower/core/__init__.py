"""flower.core."""
