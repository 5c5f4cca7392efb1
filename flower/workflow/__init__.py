"""flower.workflow."""
