/// Packs what a large push will send with git's own delta search, before
/// the push.
///
/// flowdir's packs hold whole objects (see `PackDirectory`). git's
/// pack-objects never tries a delta between two objects stored whole in the
/// same pack: it takes them for a pair an earlier pack-objects already
/// rejected. So a push of many commits from merged flowdir packs sent each
/// version of a growing tree (`nodes/<id>/runs/`, one entry a run) whole:
/// 13.5 MB of trees for 1,000 runs where deltas make them 1 MB, kept so on
/// the remote and in every clone of it. Written again by pack-objects with
/// `--no-reuse-delta`, the objects being sent are found in a pack with
/// deltas (the newest pack, so the one git reads them from), and the push
/// reuses those deltas. The objects are copied once more here; `git gc`
/// keeps one copy.
public enum PushPack {
    /// Below this many outgoing commits the copy is not worth it: few
    /// objects share a flowdir pack with an earlier version of themselves.
    public static let commitThreshold = 64

    /// Writes a pack of the objects reachable from `commit` and not from
    /// `hiding` into `gitDirectory`'s `objects/pack/`. Returns git's words
    /// when it failed; the push goes on without it (only smaller, not needed).
    public static func write(gitDirectory: String, commit: ObjectID, hiding: ObjectID?) async -> String? {
        var revs = commit.hex + "\n"
        if let hiding { revs += "^" + hiding.hex + "\n" }
        let r = await PipedCommand.run(["/usr/bin/env", "git", "--git-dir=" + gitDirectory, "pack-objects", "--revs", "--no-reuse-delta",
                                        "--delta-base-offset", "--quiet", gitDirectory + "/objects/pack/pack"],
                                       input: .bytes(Array(revs.utf8)), output: { _ in })
        return r.status == 0 ? nil : "git pack-objects: " + (r.errors.isEmpty ? "exit \(r.status)" : r.errors)
    }
}
