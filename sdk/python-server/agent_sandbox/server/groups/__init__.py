"""The capability groups' endpoints, one module per group."""
