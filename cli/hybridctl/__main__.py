from __future__ import annotations


def main() -> None:
    from hybridctl.commands.app import run_and_exit

    run_and_exit()


if __name__ == "__main__":
    main()
