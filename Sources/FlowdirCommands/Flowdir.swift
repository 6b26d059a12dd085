import ArgumentParser

/// The `flowdir` command: one type per subcommand, one file each.
public struct Flowdir: ParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "flowdir",
        abstract: "Run AI and media workflows that live in plain folders, one git repository each.",
        discussion: """
            A workflow is a DAG of tool nodes joined by typed ports, written as a YAML, JSON \
            or JSONC template. See DESIGN.md for the folder layout and the file formats.

            Exit codes: 0 success; 1 the input is invalid or something failed; 2 a file could \
            not be read, or a workflow is waiting; 64 the command line is wrong.
            """,
        version: FlowdirVersion.current,
        subcommands: [CheckCommand.self, TemplatesCommand.self]
    )

    public init() {}
}

public enum FlowdirVersion {
    public static let current = "0.1.0"
}
