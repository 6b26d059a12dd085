import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// `flowdir templates`: the "New from Template" list.
struct TemplatesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "templates",
        abstract: "List the workflow templates available to `flowdir new`.",
        discussion: """
            Looks in each DIR given, or else in ./workflows and ~/.config/flowdir/workflows \
            (XDG_CONFIG_HOME is honoured). Every template is validated as it is listed.
            """
    )

    @Argument(help: "Folders to look in.", completion: .directory)
    var directories: [String] = []

    @Flag(help: "Print the list as JSON.")
    var json = false

    func run() throws {
        let fs = LocalFileSystem()
        let user = UserPaths.current
        let dirs = directories.isEmpty ? ["workflows", user.templateDirectory].filter(fs.isDirectory) : directories
        for dir in directories where !fs.isDirectory(dir) {
            throw ValidationError("\(dir) is not a directory")
        }
        let loader = try Context.load().loader
        var entries: [Entry] = []
        for dir in dirs {
            let names = (try? fs.listDirectory(dir)) ?? []
            for name in names where Self.isTemplateName(name) {
                let path = Path.join(dir, name)
                guard fs.isRegularFile(path) else { continue }
                let loaded = loader.load(path: path)
                entries.append(Entry(name: loaded.template?.name ?? Path.removingExtension(name), path: path,
                                     nodes: loaded.template?.nodes.count ?? 0, valid: loaded.isValid,
                                     status: loaded.summary,
                                     errors: loaded.diagnostics.errors.count, warnings: loaded.diagnostics.warnings.count))
            }
        }
        if json { return try Output.json(entries) }
        guard !entries.isEmpty else {
            Output.line(dirs.isEmpty
                ? "No template folders: make ./workflows or \(user.templateDirectory), or name a folder."
                : "No templates in \(dirs.joined(separator: ", ")).")
            return
        }
        let terminal = Terminal.current
        let nameWidth = max(4, entries.map(\.name.count).max() ?? 0)
        let statusWidth = max(6, entries.map(\.status.count).max() ?? 0)
        Output.line(terminal.paint(pad("NAME", nameWidth) + "  NODES  " + pad("STATUS", statusWidth) + "  PATH", "1"))
        for e in entries {
            let nodes = String(e.nodes)
            let status = e.valid ? pad(e.status, statusWidth) : terminal.paint(pad(e.status, statusWidth), "31")
            Output.line(pad(e.name, nameWidth) + "  " + String(repeating: " ", count: max(0, 5 - nodes.count)) + nodes
                        + "  " + status + "  " + e.path)
        }
    }

    static func isTemplateName(_ name: String) -> Bool {
        !name.hasPrefix(".") && ["yaml", "yml", "json", "jsonc"].contains(Path.fileExtension(name))
    }

    private func pad(_ s: String, _ width: Int) -> String {
        s + String(repeating: " ", count: max(0, width - s.count))
    }

    struct Entry: Encodable {
        var name: String
        var path: String
        var nodes: Int
        var valid: Bool
        var status: String
        var errors: Int
        var warnings: Int
    }
}
