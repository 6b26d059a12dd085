#if canImport(Glibc)
import Glibc
#endif
import CLibGit2

/// `objects/pack/`: writes flowdir's packs, and merges the small ones so an
/// instance that commits for weeks keeps a handful of packs, not one per
/// commit (each pack is one more place every object lookup searches).
///
/// Merging is by size level, as an LSM tree does: a pack under 16 KiB is
/// level 0, then each level holds packs up to 8× larger. Sixteen packs on
/// one level make one at least a level up, so there are at most fifteen a
/// level (git lets fifty gather before `gc --auto` repacks), and a byte is
/// copied about once a level it climbs (merging four at a time, a 1,000-node
/// run copied each byte three times). At eight, every such run (ten
/// commits or so) ended in a merge after its last job. Only packs of
/// whole objects are merged (flowdir's); packs git made, packs with a
/// `.keep`, and a repository with a multi-pack-index are left to `git gc`.
final class PackDirectory {
    let path: String
    private var counter = 0
    /// Packs found to hold deltas or to be unreadable, by name (a name is
    /// the pack's checksum, so what it holds never changes).
    private var unmergeable: Set<String> = []
    static let levelBase = 16 << 10
    static let mergeCount = 16
    /// Larger packs are left as they are: merging reads them whole.
    static let mergeLimit = 64 << 20

    init(path: String) { self.path = path }

    /// Writes the pack, then its index (git finds packs by their index, so
    /// a reader never sees half a pack), each through a temp file.
    ///
    /// `kept`: a `.keep` file is written first, and stays until
    /// `release(_:)`: the pack's objects are not yet reachable from any
    /// ref, and `git repack -a -d` (run by a person, or by `git gc`)
    /// deletes every pack it did not keep whole, so it would take the
    /// objects of a commit flowdir is about to make. git leaves a kept pack
    /// alone; once the ref names the commit, its objects are reachable.
    @discardableResult
    func write(_ builder: PackBuilder, kept: Bool = false) throws(GitError) -> String {
        let (pack, index, sum) = builder.finished()
        let base = path + "/pack-" + sum
        // Whether the list still holds before this change: after it, the
        // folder's mtime is ours and would hide someone else's change.
        let current = listIsCurrent()
        if kept { try place(Array(Self.keepText.utf8), at: base + ".keep") }
        try place(pack, at: base + ".pack")
        try place(index, at: base + ".idx")
        // A kept pack is not listed (nor merged) until it is let go.
        if kept {
            keptSizes["pack-" + sum] = pack.count
            if !current { listed = nil }
        } else if current {
            noteChange(adding: ("pack-" + sum, pack.count))
        } else {
            listed = nil
        }
        return "pack-" + sum
    }

    // The packs as last listed, kept while the folder's mtime says only
    // flowdir changed it: a commit then costs one stat here, not a listing
    // and a stat of every pack.
    private var listed: [(name: String, size: Int)]?
    private var listedStamp: timespec?

    private func folderStamp() -> timespec? {
        var st = stat()
        return stat(path, &st) == 0 ? st.st_mtim : nil
    }

    private func listIsCurrent() -> Bool {
        guard listed != nil, let was = listedStamp, let now = folderStamp() else { return false }
        return was.tv_sec == now.tv_sec && was.tv_nsec == now.tv_nsec
    }

    private func packs() -> [(name: String, size: Int)] {
        if listIsCurrent(), let listed { return listed }
        let stamp = folderStamp()
        let fresh = listPacks()
        listed = fresh
        listedStamp = stamp
        return fresh
    }

    /// After flowdir's own change: the list follows it, and the folder's new mtime is flowdir's.
    private func noteChange(adding new: (name: String, size: Int)? = nil, removing gone: [String] = []) {
        guard var list = listed else { return }
        list.removeAll { gone.contains($0.name) }
        if let new, !list.contains(where: { $0.name == new.name }) { list.append(new) }
        listed = list
        listedStamp = folderStamp()
    }

    /// What a `.keep` of flowdir's says (git only asks whether the file is there).
    static let keepText = "flowdir: objects of a commit being made\n"

    private var keptSizes: [String: Int] = [:]

    /// The packs' objects are reachable now: their `.keep` files go.
    func release(_ names: [String]) {
        let current = listIsCurrent()
        for name in names {
            unlink(path + "/" + name + ".keep")
            if current, let size = keptSizes[name] { noteChange(adding: (name, size)) }
            keptSizes[name] = nil
        }
        if !current { listed = nil }
    }

    /// `.keep` files a flowdir left when it died before its commit was made:
    /// under the instance's lock no commit of flowdir's is under way.
    func removeStaleKeeps() {
        guard let names = try? LocalFileSystem().listDirectory(path) else { return }
        for file in names where file.hasPrefix("pack-") && file.hasSuffix(".keep") {
            let full = path + "/" + file
            if let bytes = try? LocalFileSystem().readFile(full, limit: 256), bytes == Array(Self.keepText.utf8) { unlink(full) }
        }
    }

    private func place(_ bytes: [UInt8], at final: String) throws(GitError) {
        counter += 1
        try ObjectFile.place(bytes, temp: path + "/tmp_pack_flowdir_\(Files.processID)_\(counter)", final: final, call: "pack write")
    }

    static func level(ofSize size: Int) -> Int {
        var level = 0
        var bound = levelBase
        while size >= bound {
            level += 1
            bound *= 8
        }
        return level
    }

    /// Merges while some level holds `count` mergeable packs. Best
    /// effort: a pack that cannot be read or written is left where it is.
    /// Returns whether packs were removed.
    @discardableResult
    func consolidate(at count: Int = mergeCount) -> Bool {
        var removed = false
        for _ in 0..<8 {
            guard access(path + "/multi-pack-index", F_OK) != 0 else { return removed }
            var byLevel: [Int: [(name: String, size: Int)]] = [:]
            for p in packs() where p.size <= Self.mergeLimit && !unmergeable.contains(p.name) {
                byLevel[Self.level(ofSize: p.size), default: []].append(p)
            }
            guard let level = byLevel.keys.sorted().first(where: { byLevel[$0]!.count >= count }),
                  merge(byLevel[level]!.map(\.name)) else { return removed }
            removed = true
        }
        return removed
    }

    /// `pack-*.idx` with their `.pack`, without `.keep` or `.promisor`, and the packs' sizes.
    func listPacks() -> [(name: String, size: Int)] {
        guard let names = try? LocalFileSystem().listDirectory(path) else { return [] }
        let all = Set(names)
        var found: [(name: String, size: Int)] = []
        for file in names where file.hasPrefix("pack-") && file.hasSuffix(".idx") {
            let name = String(file.dropLast(4))
            guard all.contains(name + ".pack"), !all.contains(name + ".keep"), !all.contains(name + ".promisor") else { continue }
            var st = stat()
            guard stat(path + "/" + name + ".pack", &st) == 0 else { continue }
            found.append((name, Int(st.st_size)))
        }
        return found.sorted { $0.name < $1.name }
    }

    /// Copies the entries of `names` into one new pack, then removes them.
    private func merge(_ names: [String]) -> Bool {
        var builder = PackBuilder()
        var merged: [String] = []
        let fs = LocalFileSystem()
        for name in names {
            guard let pack = try? fs.readFile(path + "/" + name + ".pack", limit: Self.mergeLimit + 1),
                  let index = try? fs.readFile(path + "/" + name + ".idx", limit: Self.mergeLimit + 1),
                  let contents = PackContents(pack: pack, index: index) else {
                unmergeable.insert(name)
                continue
            }
            for e in contents.entries where !builder.contains(e.id) {
                builder.append(raw: contents.bytes[e.start..<e.end], id: e.id, crc: e.crc)
            }
            merged.append(name)
        }
        guard merged.count >= 2, let new = try? write(builder) else { return false }
        // The index first: a reader that lists packs then no longer finds one about to go.
        for name in merged where name != new {
            unlink(path + "/" + name + ".idx")
            unlink(path + "/" + name + ".pack")
        }
        noteChange(removing: merged.filter { $0 != new })
        return true
    }
}
