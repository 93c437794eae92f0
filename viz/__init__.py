"""Pictures of answers and bounds (matplotlib)."""
