/// The schema names a template may declare. The seed's format loads verbatim.
public enum TemplateSchema {
    public static let supported = ["app.workflow/v2", "flowdir/v1"]
}

/// A workflow template: the DAG of tool nodes and the typed edges between
/// their ports, as written in a YAML or JSON file.
public struct WorkflowTemplate: Sendable {
    public var schema: String
    public var name: String
    public var nodes: [NodeSpec]
    public var edges: [EdgeSpec]
    public var options: WorkflowOptions
    /// The file it was read from, if any.
    public var file: String?

    public init(schema: String = TemplateSchema.supported[0], name: String, nodes: [NodeSpec] = [],
                edges: [EdgeSpec] = [], options: WorkflowOptions = .init(), file: String? = nil) {
        self.schema = schema
        self.name = name
        self.nodes = nodes
        self.edges = edges
        self.options = options
        self.file = file
    }

    public func node(_ id: String) -> NodeSpec? { nodes.first { $0.id == id } }
}

public enum ResourceClass: String, Sendable, CaseIterable, Codable {
    case local
    case remote
}

public struct NodeSpec: Sendable {
    public var id: String
    public var kind: String
    public var title: String?
    public var params: [ParamEntry]
    /// Ports as the node declares them; `nil` means "as the tool declares".
    public var inputs: [PortSpec]?
    public var outputs: [PortSpec]?
    public var awaitSpec: AwaitSpec?
    public var resourceClass: ResourceClass?
    public var location: SourceLocation?
    public var kindLocation: SourceLocation?
    public var paramsLocation: SourceLocation?

    public init(id: String, kind: String, title: String? = nil, params: [ParamEntry] = [],
                inputs: [PortSpec]? = nil, outputs: [PortSpec]? = nil, awaitSpec: AwaitSpec? = nil,
                resourceClass: ResourceClass? = nil, location: SourceLocation? = nil,
                kindLocation: SourceLocation? = nil, paramsLocation: SourceLocation? = nil) {
        self.id = id
        self.kind = kind
        self.title = title
        self.params = params
        self.inputs = inputs
        self.outputs = outputs
        self.awaitSpec = awaitSpec
        self.resourceClass = resourceClass
        self.location = location
        self.kindLocation = kindLocation
        self.paramsLocation = paramsLocation
    }
}

/// One end of an edge: a port on a node.
public struct PortRef: Hashable, Sendable, CustomStringConvertible {
    public var node: String
    public var port: String
    public var location: SourceLocation?

    public init(node: String, port: String, location: SourceLocation? = nil) {
        self.node = node
        self.port = port
        self.location = location
    }

    public var description: String { "\(node).\(port)" }
    public static func == (l: PortRef, r: PortRef) -> Bool { l.node == r.node && l.port == r.port }
    public func hash(into h: inout Hasher) { h.combine(node); h.combine(port) }
}

public struct EdgeSpec: Hashable, Sendable, CustomStringConvertible {
    public var from: PortRef
    public var to: PortRef
    public var location: SourceLocation?

    public init(from: PortRef, to: PortRef, location: SourceLocation? = nil) {
        self.from = from
        self.to = to
        self.location = location
    }

    public var description: String { "\(from) -> \(to)" }
    public static func == (l: EdgeSpec, r: EdgeSpec) -> Bool { l.from == r.from && l.to == r.to }
    public func hash(into h: inout Hasher) { h.combine(from); h.combine(to) }
}

public enum ErrorPolicy: String, Sendable, CaseIterable, Codable {
    case failFast = "fail-fast"
    case isolateNode = "isolate-node"
}

public enum ChangePolicy: String, Sendable, CaseIterable, Codable {
    /// Block the node until a person reruns it (the default).
    case block
    case rerun
}

public struct WorkflowOptions: Sendable, Equatable {
    public static let defaultRemoteConcurrency = 8
    public static let defaultLocalConcurrency = 2

    public var remoteConcurrency: Int
    public var localConcurrency: Int
    public var errorPolicy: ErrorPolicy
    public var onChange: ChangePolicy

    public init(remoteConcurrency: Int = defaultRemoteConcurrency,
                localConcurrency: Int = defaultLocalConcurrency,
                errorPolicy: ErrorPolicy = .failFast, onChange: ChangePolicy = .block) {
        self.remoteConcurrency = remoteConcurrency
        self.localConcurrency = localConcurrency
        self.errorPolicy = errorPolicy
        self.onChange = onChange
    }
}
