"""flower.stores."""
