"""GNN triage (paper §3.1): backbones score hypotheses; routing splits them into decided and reviewed."""
