import FlowdirCore
import FlowdirTemplates

/// `run.slurm` (docs/templates-and-tools.md): the tool's argv as a batch
/// job, in the run's work folder on a file system the cluster shares,
/// writing its outputs and log there.
public struct SlurmBackend: Backend {
    public let key = "slurm"
    public let traits = BackendTraits(runsInSharedFolder: true, writesOutputsInPlace: true)

    /// What `run.slurm` takes besides `command`, each an sbatch option.
    static let options = ["partition", "time", "cpus", "mem", "gres", "account"]

    public init() {}

    public func checkRun(_ value: MarkedValue, tool: ToolDefinition, sink: DiagnosticSink) -> Bool {
        let context = "`run.slurm` of tool \(tool.kind)"
        guard var r = MappingReader(value, context: context, sink: sink) else { return false }
        defer { r.finish() }
        var ok = true
        if let command = r.value("command") {
            ok = ArgvReader.read(command, tool: tool, context: "run.slurm.command", sink: sink) != nil
        }
        for o in Self.options {
            guard let v = r.value(o) else { continue }
            if v.scalarText == nil || v.scalarText!.isEmpty {
                sink.malformed("`\(o)` of \(context) must be a value like the one sbatch takes, found \(v.kindName)", at: v.location)
                ok = false
            }
        }
        return ok
    }

    public func checkSettings(_ entry: ParamEntry, file: String) -> Diagnostic? {
        let at = entry.location ?? SourceLocation(file: file, line: 1, column: 1)
        guard case .object(let fields) = entry.value else {
            return .error(.malformedFile, "`slurm` must be a mapping: { pollInterval: 10s }", at: at)
        }
        if let f = fields[key: "pollInterval"], (ConfigDecoder.duration(f.value) ?? 0) <= 0 {
            return .error(.malformedFile, "`slurm.pollInterval` must be a duration like 10s" + ConfigDecoder.durationTooLong(f.value),
                          at: f.location ?? at)
        }
        return nil
    }

    public func job(for run: BackendRun) throws -> BackendJob {
        guard case .array(let items)? = run.entries[key: "command"]?.value, !items.isEmpty,
              let template = try? CommandTemplate(parsing: items.map { $0.stringValue ?? $0.plainText }) else {
            throw BackendRun.Invalid("tool \(run.tool.kind): run.slurm needs `command:`, an argv list")
        }
        let argv = template.expand(inputs: run.inputs, outputs: run.outputs, params: run.params, runDir: run.workDir, toolDir: run.toolDir)
        let work = SlurmWork(command: CommandWork(argv: argv, environment: run.environment),
                             options: run.entries.filter { $0.key != "command" })
        return BackendJob(payload: work, command: ["slurm"] + argv)
    }

    public func executor(_ setup: BackendSetup) throws -> (any Executor)? {
        let poll = setup.settings(key)[key: "pollInterval"].flatMap { ConfigDecoder.duration($0.value) } ?? 10
        return SlurmExecutor(pollInterval: poll, logger: setup.logger, clock: setup.clock)
    }
}

/// A Slurm job: the argv and its environment, and the sbatch options as the tool wrote them.
public struct SlurmWork: Sendable {
    public var command: CommandWork
    public var options: [ParamEntry]

    public init(command: CommandWork, options: [ParamEntry] = []) {
        self.command = command
        self.options = options
    }
}
