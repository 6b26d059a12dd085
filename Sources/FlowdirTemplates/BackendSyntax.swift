import FlowdirCore

/// What reading tools and the config needs of a backend (ARCHITECTURE.md,
/// "Adding a backend"): its `run.<key>`, its traits, and checks of its own
/// entries where they are written, so `flowdir check` reports them with
/// line and column. The backends themselves are in FlowdirIO
/// (`Backend`, `Backends.all`); whoever reads tools is handed the list.
public protocol BackendSyntax: Sendable {
    /// `run.<key>` in a tool, and `<key>:` in the config for its settings.
    var key: String { get }
    var traits: BackendTraits { get }
    /// Checks `run.<key>` of `tool` (a mapping), reporting to `sink`.
    /// Returns whether a job can be made of it.
    func checkRun(_ value: MarkedValue, tool: ToolDefinition, sink: DiagnosticSink) -> Bool
    /// Checks its section of the config (`<key>: { … }`), when there is one:
    /// the first problem, or nil.
    func checkSettings(_ entry: ParamEntry, file: String) -> Diagnostic?
}

extension BackendSyntax {
    /// A backend without settings leaves its key alone, as the config does any key it does not know.
    public func checkSettings(_ entry: ParamEntry, file: String) -> Diagnostic? { nil }
}

extension ConfigDecoder {
    /// A duration as the config reads one (`10s`, `PT1M`, a number of
    /// seconds), for a backend's settings; nil when it is none or out of range.
    public static func duration(_ v: ParamValue) -> Double? { seconds(v) }

    /// " (at most 100 years)" when that is why `v` was refused as a duration.
    public static func durationTooLong(_ v: ParamValue) -> String { tooLong(v) }
}
