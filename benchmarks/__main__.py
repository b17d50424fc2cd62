from benchmarks.suite import main

main()
