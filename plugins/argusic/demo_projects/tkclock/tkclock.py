#!/usr/bin/env python3
"""tkclock: a small desktop clock. A Tk window shows the time and ticks every second."""

import argparse
import sys
import time

VERSION = "0.2.0"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tkclock", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument("--seconds", action="store_true", help="show seconds")
    args = parser.parse_args(argv)
    if args.version:
        print(f"tkclock {VERSION} (Tk {__import__('tkinter').TkVersion})")
        return 0

    import tkinter as tk

    root = tk.Tk()
    root.title("tkclock")
    root.geometry("240x80")
    label = tk.Label(root, font=("DejaVu Sans", 24))
    label.pack(expand=True, fill="both")
    pattern = "%H:%M:%S" if args.seconds else "%H:%M"

    def tick():
        label.configure(text=time.strftime(pattern))
        root.after(1000, tick)

    tick()
    root.mainloop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
