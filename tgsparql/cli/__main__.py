from tgsparql.cli import main

main()
