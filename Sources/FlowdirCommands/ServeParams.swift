import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirPages
import FlowdirTemplates

/// The params form and "Run all ready": what a person does in an editor
/// and with `flowdir run`, done for a page.
enum ServeParams {
    /// Writes the node's `params.yaml` as a person's editor would, checked
    /// first against the tool's schema (`flowdir check`'s words); it is
    /// committed as the person's edit by the flowdir that holds the
    /// instance (it notices the file), or here when none does.
    static func write(_ given: [ParamEntry], node: String, path: String, ctx: Context) async throws -> UIDone {
        let s = try ctx.reader.read(path)
        guard let n = s.graph?.node(node) else {
            throw UIError(404, "\(path) has no node '\(node)'", hint: Suggest.hint(for: node, in: s.graph?.order ?? []))
        }
        var params = s.params[node] ?? InstanceCodec.effectiveParams(n.spec.params, tool: n.tool)
        var changed: [String] = []
        for e in given {
            var value = e.value
            // JSON has one kind of number: 20 for an integer param is 20.
            if case .double(let d) = value, n.tool?.param(e.key)?.type == .integer, d == d.rounded(), abs(d) < 9e15 { value = .int(Int(d)) }
            if let i = params.firstIndex(where: { $0.key == e.key }) {
                if params[i].value == value { continue }
                params[i] = ParamEntry(key: e.key, value: value)
            } else {
                params.append(ParamEntry(key: e.key, value: value))
            }
            changed.append("\(e.key)=\(value.plainText)")
        }
        guard !changed.isEmpty else { return UIDone("The params of '\(node)' are as they were.") }
        if let tool = n.tool {
            var problems = ParamValidator.check(params, node: n.spec, tool: tool, fallback: nil).filter { $0.severity == .error }.map(\.message)
            var hint = problems.isEmpty ? nil : "fix the value and save again"
            // A tool that takes any params still keeps a value's kind: a number stays a number.
            for e in given where tool.acceptsAnyParams {
                if let before = s.params[node]?[key: e.key]?.value, before.numberValue != nil,
                   let now = params[key: e.key]?.value, now.numberValue == nil {
                    problems.append("param '\(e.key)' was \(before.plainText), a number; '\(now.plainText)' is not one")
                    hint = "give a number"
                }
            }
            if !problems.isEmpty { throw UIError(422, problems.joined(separator: "; "), hint: hint) }
        }
        let file = Path.join(path, InstancePaths.params(node))
        // What stands in the way (a FileSystemError, naming the file) is told as it is.
        try Files.writeAtomically(file, Array(InstanceCodec.encodeParams(params, node: n.spec, tool: n.tool).utf8))
        _ = try? await Engine(clock: ctx.clock, options: ctx.engineOptions()).settle(path, reader: ctx.reader)
        return UIDone("Saved the params of '\(node)': " + changed.joined(separator: ", "))
    }

    /// Starts what is ready: a watcher (this process's, or `flowdir watch`
    /// on the instance's root) starts it as soon as it is ready, so it is
    /// asked to look now; with none, `flowdir run` runs the instance in the
    /// background, as from a terminal.
    /// With `node`, that step only; refused, naming what it lacks, when it is not ready.
    static func runReady(_ path: String, node: String? = nil, watched: Bool, roots: [String], ctx: Context) async throws -> UIDone {
        let others = roots.filter { path.hasPrefix($0 + "/") }.flatMap { WatchRegistration.watchers(of: $0) }
        if let node {
            let s = try ctx.reader.read(path)
            guard let state = s.states[node]?.state else { throw UIError(404, "\(path) has no node '\(node)'") }
            if state.isActive { return UIDone("'\(node)' is running already.") }
            guard state == .ready else {
                let missing = (s.graph?.incoming[node] ?? [:]).filter { s.states[$0.value.from.node]?.state != .succeeded }
                    .map { "'\($0.key)' from '\($0.value.from.node)'" }.sorted()
                let needs = missing.isEmpty ? "" : ": it still needs " + missing.joined(separator: ", ")
                throw UIError(409, "'\(node)' is not ready (\(state.name))" + needs,
                              hint: state.isTerminal ? "Re-run or Retry it instead" : nil)
            }
        }
        if watched || !others.isEmpty {
            let s = try ctx.reader.read(path)
            if let node { return UIDone("The watcher (\(watched ? "this flowdir serve" : others[0])) starts '\(node)' as soon as a slot is free.") }
            let ready = s.states.values.filter { $0.state == .ready }.count
            let running = s.states.values.filter { $0.state.isActive }.count
            return UIDone("The watcher (\(watched ? "this flowdir serve" : others[0])) runs each step as soon as it is ready: "
                          + "\(running) running, \(ready) ready.")
        }
        let binary = Files.realPath("/proc/self/exe") ?? CommandLine.arguments[0]
        let log = Path.join(path, InstancePaths.local + "/serve-run.log")
        LocalRunner().start(LocalJob(argv: [binary, "run", path] + (node.map { ["--node", $0] } ?? []), workingDirectory: path, environment: [:],
                                     logPath: log, grace: 30),
                            cancel: CancelToken()) { _, _ in }
        let what = node.map { "'\($0)'" } ?? "what is ready"
        return UIDone("Running \(what) (flowdir run \(path)\(node.map { " --node " + $0 } ?? "")); its output goes to \(log).")
    }
}
