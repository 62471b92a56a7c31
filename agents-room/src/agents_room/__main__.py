import sys

from agents_room.cli import main

sys.exit(main())
