"""The benchmark harness (``make bench``): the agent's passes against ``kubectl apply
--server-side`` and a plain parallel server-side-apply loop on the local control plane.
Not part of the agent and not needed by the tests; see BENCHMARKS.md for a run's figures."""
