from __future__ import annotations


def main() -> None:
    from hybridctl.commands.app import run

    run()


if __name__ == "__main__":
    main()
