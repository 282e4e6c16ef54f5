from ppdm.cli.app import main

main()
