#if canImport(Glibc)
import Glibc
#endif
import CLibGit2

/// Builds a commit's tree from its parent's by splicing the raw tree
/// objects on the changed paths. libgit2's treebuilder parses and re-sorts
/// every entry of each tree it touches, so a commit under a `nodes/` folder
/// of 500 nodes cost twice one under 10; a splice touches one entry. Trees
/// this writer made or read are cached, so a commit reads nothing back.
final class TreeWriter {
    private unowned let repository: GitRepository
    /// Trees by id, with their entry offsets once looked up in. Bounded by
    /// bytes: a run touches a few trees per node, and a tree read back from
    /// disk costs an open, a read and an inflate.
    private var cache: [ObjectID: RawTree] = [:]
    private var cacheOrder: [ObjectID] = []
    private var cacheBytes = 0
    var cacheByteLimit = 32 << 20

    init(repository: GitRepository) { self.repository = repository }

    static let treeMode = Array("40000".utf8)
    static let blobMode = Array("100644".utf8)
    static let executableMode = Array("100755".utf8)

    typealias Edit = (path: ArraySlice<[UInt8]>, change: TreeChange)

    /// Tests: every batch the general way (`rewrite`), to check `build` against it.
    var alwaysGeneral = false

    func update(base: ObjectID?, changes: [TreeChange]) throws(GitError) -> ObjectID {
        if !alwaysGeneral, let tree = try updateSorted(base: base, changes: changes) { return tree }
        var edits: [Edit] = []
        for change in changes {
            let components = change.path.utf8.split(separator: UInt8(ascii: "/")).map(Array.init)
            guard !components.isEmpty else {
                throw GitError(call: "TreeWriter.update", code: -1, message: "empty path in tree update")
            }
            edits.append((components[...], change))
        }
        if let tree = try rewrite(base, edits) { return tree }
        return try write(RawTree(bytes: []))  // everything removed: the empty tree
    }

    /// The tree `id` with `edits` (paths relative to it) applied; `nil`
    /// when nothing is left in it (git stores no empty subtrees).
    private func rewrite(_ id: ObjectID?, _ edits: [Edit]) throws(GitError) -> ObjectID? {
        var tree = RawTree(bytes: [])
        if let id { tree = try raw(id) }
        var groups: [[UInt8]: [Edit]] = [:]
        var order: [[UInt8]] = []
        for edit in edits {
            let head = edit.path.first!
            if groups[head] == nil { order.append(head) }
            groups[head, default: []].append(edit)
        }
        for name in order {
            let group = groups[name]!
            // Edits apply in order: the last edit of the name itself wins,
            // and only the deeper edits after it build on what it left.
            let lastLeaf = group.lastIndex { $0.path.count == 1 }
            let deeper = group[((lastLeaf ?? -1) + 1)...].map { (path: $0.path.dropFirst(), change: $0.change) }
            if deeper.isEmpty, let lastLeaf {
                switch group[lastLeaf].change {
                case .blob(_, let blob, let executable):
                    try tree.set(name: name, mode: executable ? Self.executableMode : Self.blobMode, id: blob.raw)
                case .remove:
                    try tree.remove(name: name)
                }
                continue
            }
            var existing: ObjectID?
            if lastLeaf == nil, let entry = try tree.find(name), entry.isTree { existing = ObjectID(entry.id) }
            if let sub = try rewrite(existing, Array(deeper)) {
                try tree.set(name: name, mode: Self.treeMode, id: sub.raw)
            } else {
                try tree.remove(name: name)
            }
        }
        if tree.bytes.isEmpty { return nil }
        return try write(tree)
    }

    /// The usual batch (a group commit of a run: ~4 paths a step, a few
    /// hundred steps), when no path comes twice and none is a folder of
    /// another (a file becoming a folder goes through `rewrite`). Sorted
    /// with `/` before every other byte, each folder's edits are one run of
    /// the list, so a folder is rewritten from a range of it: no grouping
    /// into dictionaries, no copy of the edits per level, no arrays of
    /// components. `rewrite` made a fifth of a step's commit cost here.
    private func updateSorted(base: ObjectID?, changes: [TreeChange]) throws(GitError) -> ObjectID? {
        guard !changes.isEmpty else { return nil }
        let paths = changes.map { Array($0.path.utf8) }
        for p in paths {
            // Empty components ("a//b", "/a", "a/") are the general way's to read.
            guard let first = p.first, first != Self.slash, p.last != Self.slash else { return nil }
            var previous: UInt8 = 0
            for b in p {
                if b == Self.slash, previous == Self.slash { return nil }
                previous = b
            }
        }
        let order = paths.indices.sorted { Self.sortsBefore(paths[$0], paths[$1]) }
        // A path twice, or a path and one inside it, sort next to each other.
        for k in order.indices.dropFirst() {
            let p = paths[order[k - 1]], q = paths[order[k]]
            if q == p || (q.count > p.count && q[p.count] == Self.slash && q.starts(with: p)) { return nil }
        }
        let edits = order.map { (path: paths[$0], change: changes[$0]) }
        if let tree = try build(base, edits, 0..<edits.count, at: 0) { return tree }
        return try write(RawTree(bytes: []))  // everything removed: the empty tree
    }

    /// The tree `id` with the edits in `range` applied, all under the same
    /// folder, whose names start at `offset` in their paths; `nil` when
    /// nothing is left in it.
    private func build(_ id: ObjectID?, _ edits: [(path: [UInt8], change: TreeChange)], _ range: Range<Int>,
                       at offset: Int) throws(GitError) -> ObjectID? {
        guard let id else { return try buildNew(edits, range, at: offset) }
        var tree = try raw(id)
        for step in Self.steps(edits, range, at: offset) {
            let name = Array(step.name)
            switch step.kind {
            case .leaf(.blob(_, let blob, let executable)):
                try tree.set(name: name, mode: executable ? Self.executableMode : Self.blobMode, id: blob.raw)
            case .leaf(.remove):
                try tree.remove(name: name)
            case .folder(let inside, let next):
                var existing: ObjectID?
                if let entry = try tree.find(name), entry.isTree { existing = ObjectID(entry.id) }
                if let sub = try build(existing, edits, inside, at: next) {
                    try tree.set(name: name, mode: Self.treeMode, id: sub.raw)
                } else {
                    try tree.remove(name: name)
                }
            }
        }
        if tree.bytes.isEmpty { return nil }
        return try write(tree)
    }

    /// What the edits in `range` (all under one folder, their names there
    /// starting at `offset`) do in that folder, name by name: a file set or
    /// removed, or a folder with the run of edits inside it (sorted with
    /// `/` first, they follow one another) and where their names start.
    private static func steps(_ edits: [(path: [UInt8], change: TreeChange)], _ range: Range<Int>,
                              at offset: Int) -> [(name: ArraySlice<UInt8>, kind: StepKind)] {
        var steps: [(name: ArraySlice<UInt8>, kind: StepKind)] = []
        var i = range.lowerBound
        while i < range.upperBound {
            let path = edits[i].path
            let end = path[offset...].firstIndex(of: slash) ?? path.count
            guard end < path.count else {
                steps.append((path[offset..<end], .leaf(edits[i].change)))
                i += 1
                continue
            }
            var j = i + 1
            while j < range.upperBound, edits[j].path.count > end, edits[j].path[end] == slash,
                  edits[j].path[offset..<end].elementsEqual(path[offset..<end]) {
                j += 1
            }
            steps.append((path[offset..<end], .folder(i..<j, next: end + 1)))
            i = j
        }
        return steps
    }

    private enum StepKind {
        case leaf(TreeChange)
        case folder(Range<Int>, next: Int)
    }

    /// `build` of a folder that is not there yet (a first run's `runs/1/`,
    /// `out/`): its entries gathered, put in git's order once and written
    /// out, rather than spliced in one by one.
    private func buildNew(_ edits: [(path: [UInt8], change: TreeChange)], _ range: Range<Int>,
                          at offset: Int) throws(GitError) -> ObjectID? {
        var entries: [(name: ArraySlice<UInt8>, mode: [UInt8], id: git_oid)] = []
        for step in Self.steps(edits, range, at: offset) {
            switch step.kind {
            case .leaf(.blob(_, let blob, let executable)):
                entries.append((step.name, executable ? Self.executableMode : Self.blobMode, blob.raw))
            case .leaf(.remove):
                break  // nothing there to remove
            case .folder(let inside, let next):
                if let sub = try buildNew(edits, inside, at: next) { entries.append((step.name, Self.treeMode, sub.raw)) }
            }
        }
        guard !entries.isEmpty else { return nil }
        entries.sort { RawTree.precedes(Array($0.name), $0.mode == Self.treeMode, $1.name, $1.mode == Self.treeMode) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.reduce(0) { $0 + $1.mode.count + $1.name.count + 22 })
        for e in entries {
            bytes += e.mode
            bytes.append(0x20)
            bytes += e.name
            bytes.append(0)
            withUnsafeBytes(of: e.id.id) { bytes += $0 }
        }
        return try write(RawTree(bytes: bytes))
    }

    private static let slash = UInt8(ascii: "/")

    /// Byte order with `/` first, so a folder's paths are next to each other.
    static func sortsBefore(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        let n = min(a.count, b.count)
        var i = 0
        while i < n {
            let x = a[i], y = b[i]
            if x != y { return (x == slash ? 0 : x) < (y == slash ? 0 : y) }
            i += 1
        }
        return a.count < b.count
    }

    private func write(_ tree: RawTree) throws(GitError) -> ObjectID {
        let id = try repository.objects().write(tree.bytes, type: GIT_OBJECT_TREE)
        remember(id, tree)
        return id
    }

    private func raw(_ id: ObjectID) throws(GitError) -> RawTree {
        if let hit = cache[id] { return hit }
        // Made in this batch, then dropped from the cache: libgit2 reads it once it is in its pack.
        let objects = try repository.objects()
        if objects.isPending(id) { try objects.flushBatch() }
        var odb: OpaquePointer?
        try git("git_repository_odb") { git_repository_odb(&odb, repository.pointer) }
        defer { git_odb_free(odb) }
        var object: OpaquePointer?
        var oid = id.raw
        try git("git_odb_read(\(id.short))") { git_odb_read(&object, odb, &oid) }
        defer { git_odb_object_free(object) }
        let size = git_odb_object_size(object)
        let tree = RawTree(bytes: size == 0 ? [] : Array(UnsafeRawBufferPointer(start: git_odb_object_data(object), count: size)))
        remember(id, tree)
        return tree
    }

    /// The entries of `tree`, from the raw tree (cached, as for `entry(at:in:)`).
    func entries(of tree: ObjectID) throws(GitError) -> [TreeEntry] {
        try raw(tree).entries()
    }

    /// The entry at `path` in `tree`, walked over raw trees: those this
    /// writer made are in its cache, where libgit2 would read each from
    /// disk, inflate and parse it again (it never saw them being written).
    func entry(at path: String, in tree: ObjectID) throws(GitError) -> TreeEntry? {
        let parts = path.utf8.split(separator: UInt8(ascii: "/")).map(Array.init)
        var current = tree
        for (k, name) in parts.enumerated() {
            var tree = try raw(current)
            let found = try tree.find(name)
            if cache[current] != nil { cache[current] = tree }  // with its entry offsets, for the next lookup in it
            guard let found else { return nil }
            if k == parts.count - 1 {
                return TreeEntry(name: String(decoding: name, as: UTF8.self), id: ObjectID(found.id), isTree: found.isTree, mode: found.mode)
            }
            guard found.isTree else { return nil }
            current = ObjectID(found.id)
        }
        return nil
    }

    private func remember(_ id: ObjectID, _ tree: RawTree) {
        if cache.updateValue(tree, forKey: id) == nil {
            cacheOrder.append(id)
            cacheBytes += tree.bytes.count
        }
        guard cacheBytes > cacheByteLimit else { return }
        // The oldest go, down to half the limit (dropping in bulk keeps this off the per-commit path).
        var dropped = 0
        while dropped < cacheOrder.count, cacheBytes > cacheByteLimit / 2 {
            cacheBytes -= cache.removeValue(forKey: cacheOrder[dropped])?.bytes.count ?? 0
            dropped += 1
        }
        cacheOrder.removeFirst(dropped)
    }
}

/// A tree object's raw bytes (`mode name\0oid`, sorted), edited in place:
/// finding, replacing, inserting or removing one entry touches no other.
struct RawTree {
    var bytes: [UInt8]

    struct Slot {
        var start: Int
        var nameStart: Int
        var nameEnd: Int
        var end: Int
        var isTree: Bool
    }

    struct Found {
        var id: git_oid
        var isTree: Bool
        var mode: UInt32
    }

    private static let malformed = GitError(call: "TreeWriter", code: -1, message: "malformed tree object")

    /// Where each entry starts, found in one pass on the first lookup and
    /// kept while entries are only overwritten in place: lookups are then
    /// binary searches, not a scan of the `nodes/` folder per changed node.
    private var starts: [Int]?

    init(bytes: [UInt8]) { self.bytes = bytes }

    private func slot(at i: Int) throws(GitError) -> Slot {
        let n = bytes.count
        // memchr over the mode (≤ 6 bytes) and the name: this runs for every entry of a big folder.
        let (space, nul) = bytes.withUnsafeBufferPointer { b -> (Int, Int) in
            guard let base = b.baseAddress, i < n else { return (n, n) }
            guard let sp = memchr(base + i, 0x20, n - i) else { return (n, n) }
            let space = UnsafeRawPointer(sp) - UnsafeRawPointer(base)
            guard space + 1 < n, let z = memchr(base + space + 1, 0, n - space - 1) else { return (space, n) }
            return (space, UnsafeRawPointer(z) - UnsafeRawPointer(base))
        }
        guard space < n, nul + 21 <= n else { throw Self.malformed }
        return Slot(start: i, nameStart: space + 1, nameEnd: nul, end: nul + 21,
                    isTree: space - i == 5 && bytes[i] == UInt8(ascii: "4"))
    }

    private mutating func entryStarts() throws(GitError) -> [Int] {
        if let starts { return starts }
        var found: [Int] = []
        var i = 0
        while i < bytes.count {
            found.append(i)
            i = try slot(at: i).end
        }
        starts = found
        return found
    }

    /// The slot of `name`, or the offset where it would be inserted.
    private mutating func locate(_ name: [UInt8], isTree: Bool) throws(GitError) -> (slot: Slot?, insertAt: Int) {
        let starts = try entryStarts()
        var low = 0, high = starts.count
        while low < high {
            let mid = (low + high) / 2
            let slot = try slot(at: starts[mid])
            let existing = bytes[slot.nameStart..<slot.nameEnd]
            if existing.elementsEqual(name) { return (slot, slot.start) }
            if Self.precedes(name, isTree, existing, slot.isTree) { high = mid } else { low = mid + 1 }
        }
        return (nil, low < starts.count ? starts[low] : bytes.count)
    }

    /// Every entry, in the tree's order.
    func entries() throws(GitError) -> [TreeEntry] {
        var out: [TreeEntry] = []
        var i = 0
        while i < bytes.count {
            let slot = try slot(at: i)
            let found = found(at: slot)
            out.append(TreeEntry(name: String(decoding: bytes[slot.nameStart..<slot.nameEnd], as: UTF8.self), id: ObjectID(found.id),
                                 isTree: found.isTree, mode: found.mode))
            i = slot.end
        }
        return out
    }

    mutating func find(_ name: [UInt8]) throws(GitError) -> Found? {
        // A name is found whether it is a tree or a blob; try both orders.
        for asTree in [true, false] {
            guard let slot = try locate(name, isTree: asTree).slot else { continue }
            return found(at: slot)
        }
        return nil
    }

    /// The id, kind and mode of the entry in `slot`.
    private func found(at slot: Slot) -> Found {
        var oid = git_oid()
        withUnsafeMutableBytes(of: &oid.id) { dest in
            bytes.withUnsafeBytes { dest.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[(slot.nameEnd + 1)..<slot.end])) }
        }
        let mode = bytes[slot.start..<(slot.nameStart - 1)].reduce(UInt32(0)) { $0 * 8 + UInt32($1 &- 0x30) }  // octal digits
        return Found(id: oid, isTree: slot.isTree, mode: mode)
    }

    /// Inserts or replaces `name` (as a blob or a tree), keeping git's order.
    mutating func set(name: [UInt8], mode: [UInt8], id: git_oid) throws(GitError) {
        // The usual case: same name, same mode, new content: overwrite the id in place.
        if let slot = try locate(name, isTree: mode == TreeWriter.treeMode).slot,
           bytes[slot.start..<(slot.nameStart - 1)].elementsEqual(mode) {
            withUnsafeBytes(of: id.id) { raw in
                bytes.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: slot.nameEnd + 1).copyMemory(from: raw.baseAddress!, byteCount: 20) }
            }
            return
        }
        try remove(name: name)  // it may change kind (a file becomes a folder), and so its place
        var record = mode
        record.append(0x20)
        record += name
        record.append(0)
        withUnsafeBytes(of: id.id) { record += $0 }
        let at = try locate(name, isTree: mode == TreeWriter.treeMode).insertAt
        bytes.insert(contentsOf: record, at: at)
        starts = nil
    }

    mutating func remove(name: [UInt8]) throws(GitError) {
        for asTree in [true, false] {
            if let slot = try locate(name, isTree: asTree).slot {
                bytes.removeSubrange(slot.start..<slot.end)
                starts = nil
                return
            }
        }
    }

    /// git's order: byte order of names, a tree's name read with a `/` after it.
    static func precedes(_ a: [UInt8], _ aTree: Bool, _ b: ArraySlice<UInt8>, _ bTree: Bool) -> Bool {
        var i = a.startIndex, j = b.startIndex
        while i < a.endIndex, j < b.endIndex {
            if a[i] != b[j] { return a[i] < b[j] }
            i += 1
            j += 1
        }
        let ca: UInt8? = i < a.endIndex ? a[i] : (aTree ? UInt8(ascii: "/") : nil)
        let cb: UInt8? = j < b.endIndex ? b[j] : (bTree ? UInt8(ascii: "/") : nil)
        switch (ca, cb) {
        case (nil, nil): return false
        case (nil, _): return true
        case (_, nil): return false
        case (let x?, let y?): return x < y
        }
    }
}
