from predictorx.program import main

main()
