import ArgumentParser
import FlowdirCore
import FlowdirIO
import FlowdirRuntime

/// `flowdir clone <url> [<dir>]`: an instance from another machine, made a working one here.
struct CloneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clone",
        abstract: "Clone an instance's repository (with your git) and make it a working instance here."
    )

    @Argument(help: "Where the instance's repository is: anything `git clone` takes (a path, file://, ssh://, host:path).")
    var url: String

    @Argument(help: "The new folder (default: the repository's name).")
    var directory: String?

    func run() async throws {
        let ctx = try Context.load()
        // git would take either as one of its options (`--upload-pack=…` runs a command).
        guard GitArguments.isName(url) else { throw CommandError(GitArguments.refusal("address", url)) }
        let dir = directory ?? Self.defaultName(url)
        guard GitArguments.isName(dir) else { throw CommandError(GitArguments.refusal("folder", dir), hint: "write it as ./\(dir)") }
        if Files.exists(dir) { throw CommandError("\(dir) already exists", hint: "name another folder: \(Shell.command(["flowdir", "clone", url])) OTHER") }
        let r = await GitCommandTransport().git(["clone", "--quiet", "--", url, dir], in: Files.currentDirectory)
        guard r.status == 0 else {
            throw CommandError("git clone \(url) failed: \(r.output.trimmingCharacters(in: " \n"))",
                               hint: "check the address and that `\(Shell.command(["git", "ls-remote", "--", url]))` works here")
        }
        // A bare repository made with `git init --bare` names `master` as its
        // HEAD while the instance was pushed as `main`: git checks out nothing.
        if let repo = try? GitRepository.open(dir), let unborn = repo.unbornHead() {
            let remote = await GitCommandTransport().git(["for-each-ref", "--format=%(refname:lstrip=3)", "refs/remotes/origin"], in: dir)
            let branches = remote.output.split(separator: "\n").map(String.init).filter { $0 != "HEAD" }
            if let branch = branches.contains("main") ? "main" : branches.count == 1 ? branches[0] : nil, GitArguments.isName(branch) {
                let r = await GitCommandTransport().git(["checkout", "--quiet", "-B", branch, "origin/" + branch, "--"], in: dir)
                if r.status != 0 { throw CommandError("git checkout \(branch) in \(dir) failed: \(r.output)") }
            } else if !branches.isEmpty {
                throw CommandError("\(url) has no branch '\(unborn.branch)' and several others: \(branches.joined(separator: ", "))",
                                   hint: "\(Shell.command(["git", "-C", dir, "checkout"])) BRANCH")
            }
        }
        guard ctx.reader.isInstance(dir) else {
            throw CommandError("\(url) is a git repository but not a flowdir instance (no instance.yaml); it is cloned in \(dir)",
                               hint: "remove \(Shell.quote(dir)) if it is not wanted")
        }
        // Opened once as flowdir opens an instance: its local excludes set, its record read.
        let open = try OpenInstance.open(dir, purpose: "clone", reader: ctx.reader, clock: ctx.clock)
        let record = open.snapshot.record
        try open.close()
        ctx.registry.remember(id: record.id, path: dir)
        Output.line("Cloned '\(record.title)' into \(dir): \(open.snapshot.states.count) nodes")
        Output.line("  next: \(Shell.command(["flowdir", "show", dir])); \(Shell.command(["flowdir", "sync", dir])) to exchange with \(url)")
    }

    static func defaultName(_ url: String) -> String {
        var name = url.split(whereSeparator: { $0 == "/" || $0 == ":" }).last.map(String.init) ?? "instance"
        if name.hasSuffix(".git") { name.removeLast(4) }
        return name.isEmpty ? "instance" : name
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
