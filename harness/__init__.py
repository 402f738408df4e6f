"""What the tests and the benchmarks share: throwaway dbt projects (run in
this process, or a process per run) and the local Spark session they use."""
