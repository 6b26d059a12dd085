/// What `flowdir storage free` may drop, and why it keeps the rest
/// (docs/storage.md): pure rules over what an instance's history refers
/// to. The content of one object may be referred to by several runs and
/// nodes; it is dropped only when every reference allows it, and never
/// before the remote is seen to hold it at that moment (checked by the
/// caller just before dropping, and again here from what it found).
public enum FreePlan {
    /// One file of an instance's history kept in the content store.
    public struct Reference: Sendable, Hashable {
        public var oid: String
        public var size: Int64
        /// The node whose output it is; nil for a file outside `nodes/` (an answer not yet taken).
        public var node: String?
        /// The run that made it (nil: not a run's output).
        public var run: Int?
        /// Its path in the instance, for what is said.
        public var path: String
        /// Whether it is in the working tree now (a node's current output).
        public var current: Bool
        /// Seconds since the epoch when it was last current (the commit that replaced it; now, for a current one).
        public var usedAt: Double
        public var pinned: Bool
        /// Referred to by a commit the sync remote does not have yet.
        public var unpushed: Bool
        /// An answer in `inbox/` not yet taken, or the input of a node that is ready or running.
        public var inUse: Bool

        public init(oid: String, size: Int64, node: String?, run: Int?, path: String, current: Bool, usedAt: Double,
                    pinned: Bool = false, unpushed: Bool = false, inUse: Bool = false) {
            self.oid = oid
            self.size = size
            self.node = node
            self.run = run
            self.path = path
            self.current = current
            self.usedAt = usedAt
            self.pinned = pinned
            self.unpushed = unpushed
            self.inUse = inUse
        }
    }

    public struct Options: Sendable, Equatable {
        /// Keep content used more recently than this many seconds ago.
        public var olderThan: Double?
        /// Keep the content of each node's newest N runs (1: its current outputs).
        public var keepRuns: Int
        /// Stop once the content kept here is at most this many bytes (least recently used dropped first).
        public var to: Int64?

        public init(olderThan: Double? = nil, keepRuns: Int = 1, to: Int64? = nil) {
            self.olderThan = olderThan
            self.keepRuns = keepRuns
            self.to = to
        }
    }

    /// Why an object stays.
    public enum Keep: String, Sendable, Equatable, CaseIterable {
        case pinned = "pinned"
        case unpushed = "in a commit not yet synced"
        case inUse = "an answer not yet taken, or an input of a ready or running node"
        case noRemote = "not on the sync remote"
        case recentRun = "one of its node's newest runs"
        case recent = "used recently"
        case enough = "enough space freed already"
    }

    public struct Result: Sendable, Equatable {
        /// Objects to drop, least recently used first, with every reference to each.
        public var drop: [(oid: String, size: Int64, references: [Reference])]
        /// Objects kept, with the first reason that keeps each.
        public var kept: [(oid: String, size: Int64, why: Keep)]

        public static func == (a: Result, b: Result) -> Bool {
            a.drop.map(\.oid) == b.drop.map(\.oid) && a.kept.map(\.oid) == b.kept.map(\.oid) && a.kept.map(\.why) == b.kept.map(\.why)
        }
    }

    /// - Parameters:
    ///   - references: every reference to an object held here.
    ///   - onRemote: the objects the sync remote holds, as just seen.
    ///   - now: seconds since the epoch.
    public static func plan(_ references: [Reference], onRemote: Set<String>, options: Options, now: Double) -> Result {
        // Each node's runs, newest first, to keep the newest N.
        var runsByNode: [String: [Int]] = [:]
        for r in references { if let node = r.node, let run = r.run { runsByNode[node, default: []].append(run) } }
        var keptRuns: [String: Set<Int>] = [:]
        for (node, runs) in runsByNode { keptRuns[node] = Set(Set(runs).sorted(by: >).prefix(max(0, options.keepRuns))) }

        var byOID: [String: [Reference]] = [:]
        for r in references { byOID[r.oid, default: []].append(r) }
        var candidates: [(oid: String, size: Int64, usedAt: Double, refs: [Reference])] = []
        var kept: [(oid: String, size: Int64, why: Keep)] = []
        for (oid, refs) in byOID {
            let size = refs[0].size
            func keeps(_ r: Reference) -> Keep? {
                if r.pinned { return .pinned }
                if r.unpushed { return .unpushed }
                if r.inUse { return .inUse }
                if let node = r.node, let run = r.run, keptRuns[node]?.contains(run) == true { return .recentRun }
                // A current file not tied to a run (an answer taken as an output) counts as its node's newest.
                if r.current, r.run == nil, options.keepRuns > 0 { return .recentRun }
                if let age = options.olderThan, now - r.usedAt < age { return .recent }
                return nil
            }
            if let why = Keep.allCases.first(where: { reason in refs.contains { keeps($0) == reason } }) {
                kept.append((oid, size, why))
            } else if !onRemote.contains(oid) {
                kept.append((oid, size, .noRemote))
            } else {
                candidates.append((oid, size, refs.map(\.usedAt).max() ?? 0, refs))
            }
        }
        // Least recently used first; the oid breaks ties so a plan is the same each time.
        candidates.sort { ($0.usedAt, $0.oid) < ($1.usedAt, $1.oid) }
        var drop: [(oid: String, size: Int64, references: [Reference])] = []
        var held = references.reduce(into: [String: Int64]()) { $0[$1.oid] = $1.size }.values.reduce(0, +)
        for c in candidates {
            if let target = options.to, held <= target {
                kept.append((c.oid, c.size, .enough))
                continue
            }
            drop.append((c.oid, c.size, c.refs.sorted { ($0.path, $0.run ?? 0) < ($1.path, $1.run ?? 0) }))
            held -= c.size
        }
        kept.sort { $0.oid < $1.oid }
        return Result(drop: drop, kept: kept)
    }
}
