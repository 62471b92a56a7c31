from predictorx.cli.main import main

main()
