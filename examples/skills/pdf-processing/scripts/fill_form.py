"""Fills the form fields of a PDF: fill_form.py IN.pdf OUT.pdf name=value..."""
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    fields = dict(arg.split("=", 1) for arg in argv[3:])
    print(f"would fill {len(fields)} field(s) of {argv[1]} into {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
