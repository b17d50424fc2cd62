from neardup.cli import main

main()
