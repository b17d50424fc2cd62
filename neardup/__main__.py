from neardup.cli import run

run()
