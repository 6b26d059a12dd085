import FlowdirCore
import FlowdirIO
import HTTPTypes

/// What the pages of `flowdir serve` show and do, from whoever knows the
/// instances: the command layer, with the same code as `ls`, `show`,
/// `inbox` and the action commands (so the same checks apply and the same
/// commits are made); a fake in tests. The server adds HTTP, the token,
/// live events and thumbnails. Views are JSON as docs/serve.md gives them.
public protocol UIBackend: Sendable {
    /// Every instance folder under the roots, for the change feed.
    func instanceFolders() -> [String]
    /// The folders new instances appear in.
    func roots() -> [String]
    /// The folder of the instance with this id (404 when there is none).
    func folder(of id: String) throws(UIError) -> String
    /// The id of the instance in this folder, when it is one.
    func id(ofFolder folder: String) -> String?

    func list(_ query: UIListQuery) async throws(UIError) -> [UInt8]
    func detail(_ id: String) async throws(UIError) -> [UInt8]
    /// A node's runs, newest first, each with its params' changes.
    func history(_ id: String, node: String) async throws(UIError) -> [UInt8]
    /// Where the output `port` of run `run` of `node` is, whichever run it
    /// is (an older run's file is no longer in `out/`).
    func runOutput(_ id: String, node: String, run: Int, port: String) async throws(UIError) -> RunOutputSource
    func inbox() async throws(UIError) -> [UInt8]
    func templates() async throws(UIError) -> [UInt8]

    /// Settings: what the config says (tokens never), polling, this
    /// server's address and token file (docs/serve.md, "Settings").
    func settings() async throws(UIError) -> [UInt8]
    /// Each endpoint asked now whether it answers (Settings fills these in after).
    func endpointChecks() async throws(UIError) -> [UInt8]
    /// Per instance: what git and large files take here, what is pinned, what could be freed.
    func storage() async throws(UIError) -> [UInt8]
    /// `flowdir storage free` over every instance; with `dryRun`, what it would drop.
    func freeSpace(dryRun: Bool) async throws(UIError) -> [UInt8]

    /// Carries out a person's action on instance `id` (or on its `node`).
    func perform(_ action: UIAction, instance id: String, node: String?) async throws(UIError) -> UIDone
    func create(template: String, name: String?) async throws(UIError) -> UIDone
}

/// An output of a past run, to be served: a file (its content in `out/`
/// or in the content store), or a blob read from git (under `bigFile`:
/// small). `name` gives its type (`image.png`).
public enum RunOutputSource: Sendable, Equatable {
    case file(path: String, name: String)
    case bytes([UInt8], name: String)
}

public struct UIListQuery: Sendable, Equatable {
    public enum Filter: String, Sendable { case all, active, done, failed }
    public enum Sort: String, Sendable { case recent, name }

    public var filter: Filter = .all
    public var sort: Sort = .recent
    public var search: String?
    public var archived = false

    public init(filter: Filter = .all, sort: Sort = .recent, search: String? = nil, archived: Bool = false) {
        self.filter = filter
        self.sort = sort
        self.search = search
        self.archived = archived
    }
}

public struct UIUpload: Sendable, Equatable {
    public var port: String
    public var name: String
    public var bytes: [UInt8]

    public init(port: String, name: String, bytes: [UInt8]) {
        self.port = port
        self.name = name
        self.bytes = bytes
    }
}

public enum UIAction: Sendable, Equatable {
    case answerFiles([UIUpload])
    case answerChoice(String)
    case approve(params: [ParamEntry])
    case decline
    case claim
    case release
    case snooze(seconds: Double?)
    case skip
    case cancel
    /// From run N's frozen inputs and params (nil: the last run's).
    case retry(run: Int?)
    case rerun
    /// Run this one node now (a ready card's Run).
    case runNode
    case setParams([ParamEntry])
    case polling(paused: Bool)
    case runReady
    case duplicate(name: String?)
    case archive(Bool)
    case delete
    /// Keep the instance's (or the node's) large files here and never free them; `false` lets them go again.
    case pin(Bool)
}

/// What came of an action: the command's own words, and the id of an
/// instance it made (duplicate, new).
public struct UIDone: Sendable, Equatable {
    public var message: String
    public var id: String?

    public init(_ message: String, id: String? = nil) {
        self.message = message
        self.id = id
    }
}

/// An action refused or a view that cannot be given: what went wrong,
/// what to do, and the HTTP status that says which. The routes throw it
/// (an `HTTPResponseError`, answered as JSON: Routes/RouteSupport.swift).
public struct UIError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var message: String
    public var hint: String?

    public init(_ status: Int, _ message: String, hint: String? = nil) {
        self.status = HTTPResponse.Status(code: status)
        self.message = message
        self.hint = hint
    }

    public var description: String { message + (hint.map { " (\($0))" } ?? "") }

    public var json: JSONValue {
        var o: [String: JSONValue] = ["error": .string(message)]
        if let hint { o["hint"] = .string(hint) }
        return .object(o)
    }
}
