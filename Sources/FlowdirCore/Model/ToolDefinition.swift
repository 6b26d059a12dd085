/// A tool kind: how a node of that kind runs, what it takes and gives, and
/// which params it accepts. Read from `<Kind>.yaml` or built in.
public struct ToolDefinition: Sendable {
    public var kind: String
    public var summary: String?
    public var resourceClass: ResourceClass
    public var inputs: [PortSpec]
    public var outputs: [PortSpec]
    public var params: [ParamSchema]
    public var run: RunSpec
    /// Interactive tools ask a person; nodes of this kind await by default.
    public var interaction: AwaitType?
    /// Built-in interactive kinds take whatever ports the node declares.
    public var flexiblePorts: Bool
    /// `ParamConfirm` confirms whatever params the node carries.
    public var acceptsAnyParams: Bool
    /// The file it came from, or `nil` for a built-in.
    public var file: String?
    /// Named sets of param values a person can apply at once (a params
    /// form's Presets menu): each changes only the params it names.
    public var presets: [ParamPreset] = []

    public init(kind: String, summary: String? = nil, resourceClass: ResourceClass = .local,
                inputs: [PortSpec] = [], outputs: [PortSpec] = [], params: [ParamSchema] = [],
                run: RunSpec = .builtin, interaction: AwaitType? = nil, flexiblePorts: Bool = false,
                acceptsAnyParams: Bool = false, file: String? = nil) {
        self.kind = kind
        self.summary = summary
        self.resourceClass = resourceClass
        self.inputs = inputs
        self.outputs = outputs
        self.params = params
        self.run = run
        self.interaction = interaction
        self.flexiblePorts = flexiblePorts
        self.acceptsAnyParams = acceptsAnyParams
        self.file = file
    }

    public var isBuiltin: Bool { file == nil }

    public func param(_ name: String) -> ParamSchema? { params.first { $0.name == name } }
}

/// `presets: { fast: { steps: 20 } }` in a tool file (docs/templates-and-tools.md).
public struct ParamPreset: Hashable, Sendable {
    public var name: String
    public var params: [ParamEntry]

    public init(name: String, params: [ParamEntry]) {
        self.name = name
        self.params = params
    }
}

public enum RunSpec: Sendable, Equatable {
    /// Done by flowdir itself (interactive kinds, `ImageLoader`).
    case builtin
    /// An argv run without a shell; see `CommandTemplate`.
    case command(CommandTemplate)
    /// `run.<key>`: a backend outside this machine's processes (a job API,
    /// Slurm, ssh), its entry kept as written. The backend of that key
    /// checked it when the tool was read and makes a job of it for a run.
    case backend(key: String, entries: [ParamEntry])

    /// Run by a backend outside this machine's processes.
    public var isRemote: Bool {
        if case .backend = self { return true }
        return false
    }

    /// The backend's key, for a `run.<key>` tool.
    public var backendKey: String? {
        if case .backend(let key, _) = self { return key }
        return nil
    }
}

public enum ParamType: String, Sendable, CaseIterable, Codable {
    case number
    case integer
    case string
    case boolean
    /// A path to a file; a string that a person may type.
    case path
    case array
    case object
    case any
}

public struct ParamSchema: Sendable, Equatable {
    public var name: String
    public var type: ParamType
    public var defaultValue: ParamValue?
    public var min: Double?
    public var max: Double?
    public var allowed: [ParamValue]?
    /// Shown in the param digest (`steps=30 · cfg=4.0`).
    public var summary: Bool
    /// Must be given when there is no default.
    public var required: Bool
    public var description: String?

    public init(name: String, type: ParamType, defaultValue: ParamValue? = nil, min: Double? = nil,
                max: Double? = nil, allowed: [ParamValue]? = nil, summary: Bool = false,
                required: Bool = false, description: String? = nil) {
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
        self.min = min
        self.max = max
        self.allowed = allowed
        self.summary = summary
        self.required = required
        self.description = description
    }
}

/// The outcome of looking a kind up.
public enum ToolLookup: Sendable {
    case found(ToolDefinition)
    /// No tool provides the kind: the node loads blocked, "Tool not installed".
    case notInstalled
    /// A tool file exists but has errors, reported against that file.
    case broken

    public var tool: ToolDefinition? { if case .found(let t) = self { t } else { nil } }
}
