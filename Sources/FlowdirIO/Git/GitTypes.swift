import CLibGit2

/// A git object id. flowdir names every input and output by its blob id
/// (docs/instance-folder.md, provenance).
public struct ObjectID: Hashable, Sendable, CustomStringConvertible {
    var raw: git_oid

    init(_ raw: git_oid) { self.raw = raw }

    public init?(hex: String) {
        var oid = git_oid()
        guard hex.utf8.count == 40, git_oid_fromstr(&oid, hex) == 0 else { return nil }
        raw = oid
    }

    public var hex: String {
        var buffer = [CChar](repeating: 0, count: 41)
        var oid = raw
        git_oid_tostr(&buffer, 41, &oid)
        return String(decoding: buffer.prefix(40).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var short: String { String(hex.prefix(12)) }
    public var description: String { hex }

    /// The empty blob's id, known without hashing: a quiet job's log and a
    /// `touch`ed output are empty, and sha1dc costs ~3.5K instructions even for no bytes.
    public static let emptyBlob = ObjectID(hex: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")!

    public static func == (l: ObjectID, r: ObjectID) -> Bool {
        var a = l.raw, b = r.raw
        return git_oid_equal(&a, &b) != 0
    }

    public func hash(into hasher: inout Hasher) {
        withUnsafeBytes(of: raw.id) { hasher.combine(bytes: $0) }
    }
}

/// Who made a commit, and when.
public struct GitSignature: Equatable, Sendable {
    public var name: String
    public var email: String
    /// Seconds since the epoch.
    public var time: Int64
    /// Minutes east of UTC.
    public var offsetMinutes: Int32

    /// `Ann Lee <ann@example.org>`, as git writes it.
    public var identity: String { "\(name) <\(email)>" }

    /// A person: the repository's git identity when configured, else user@host.
    public static func person(in repository: GitRepository?, time: Int64) -> GitSignature {
        let name = repository?.configString("user.name") ?? Host.user
        let email = repository?.configString("user.email") ?? "\(Host.user)@\(Host.name)"
        return GitSignature(name: name, email: email, time: time)
    }

    public init(name: String, email: String, time: Int64, offsetMinutes: Int32 = 0) {
        self.name = name
        self.email = email
        self.time = time
        self.offsetMinutes = offsetMinutes
    }
}

/// One path changed by a commit: new content, or removed.
public enum TreeChange: Sendable, Equatable {
    case blob(path: String, id: ObjectID, executable: Bool = false)
    case remove(path: String)

    public var path: String {
        switch self {
        case .blob(let p, _, _), .remove(let p): p
        }
    }
}

/// A commit as history shows it.
public struct CommitInfo: Sendable, Equatable {
    public var id: ObjectID
    public var tree: ObjectID
    public var parents: [ObjectID]
    public var message: String
    public var author: GitSignature
    public var committer: GitSignature

    public var summary: String { String(message.prefix { $0 != "\n" }) }
}

/// An entry of a tree, for walking and comparing trees.
public struct TreeEntry: Sendable, Equatable {
    public var name: String
    public var id: ObjectID
    public var isTree: Bool
    public var mode: UInt32
}
