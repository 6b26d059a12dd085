"""What the reliability scripts share: reading a node's state as a person would."""


def state(inst, node):
    """The `state:` of nodes/<node>/state.yaml in the instance at `inst`; "missing" without one."""
    try:
        for line in open(f"{inst}/nodes/{node}/state.yaml"):
            if line.startswith("state:"):
                return line.split(":", 1)[1].strip()
    except FileNotFoundError:
        return "missing"
    return "?"
