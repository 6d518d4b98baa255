"""``python -m examples.configmap_annotator [kcontrol-manager flags]``."""

import sys

from examples.configmap_annotator import SPEC
from kcontrol.manager import ControllerRegistry, main

if __name__ == "__main__":
    sys.exit(main(registry=ControllerRegistry([SPEC])))
