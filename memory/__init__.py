"""Memory tiers behind small interfaces: checkpoints (hot), documents, and the thread index."""
