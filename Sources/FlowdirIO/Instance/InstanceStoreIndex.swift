import FlowdirCore

// MARK: git's index beside a person's git

extension InstanceStore {
    /// How long after a person's git command last wrote one of its files
    /// `flowdir run`'s commits wait (the watcher's `GitHolds` does the same).
    static let personsGitQuiet = 0.3

    /// Takes git's index lock once a person's git has left the index alone
    /// for `personsGitQuiet` (their `git add` or `git pull` just wrote it;
    /// one that holds the lock is waited for by taking it). One `lstat` a
    /// commit while the index is the one flowdir wrote last.
    /// `git commit` reads the index before it takes the lock and writes
    /// what it read after: a commit of flowdir's in between would be taken
    /// out of git's index, and so out of the person's next commit. A person
    /// adds and commits a moment apart; this waits that moment out. Only on
    /// the store's thread (`flowdir run`), never blocking the engine, and
    /// for 5 s at most: a long git command is waited for by the lock itself.
    func yieldToPersonsGit() throws {
        var waited = 0.0
        while true {
            try indexLock.take(timeout: gitLockTimeout)
            // Held since a write failed: no git command could write the index meanwhile.
            guard pendingIndex.isEmpty, waited < 5 else { return }
            guard let since = repo.secondsSinceOthersWroteIndex(), since < Self.personsGitQuiet else { return }
            indexLock.release()
            let pause = max(0.01, Self.personsGitQuiet - since)
            clock.pause(for: .seconds(pause))
            waited += pause
        }
    }

    /// Writes a commit's index entries before the commit moves HEAD, git's
    /// lock held until it has: a person's git never finds HEAD ahead of
    /// the index. `git commit` reads HEAD, then the index without taking
    /// the lock (it takes it only to write), so with the index written
    /// after HEAD moved, a commit that read both in between would build on
    /// the new HEAD from the old index and undo flowdir's commit. This way
    /// it either read HEAD first, and git refuses its commit because HEAD
    /// moved, or it read both after. Should the write fail (a full disk),
    /// the lock stays held and the entries pending, written again by
    /// `flushIndex` or `retryFailedWrites`; the commit is made either way.
    func stageIndex(_ treeChanges: [TreeChange], stamps: [String: FileStamp]) throws {
        for change in treeChanges {
            pendingIndex[change.path] = change
            pendingStamps[change.path] = stamps[change.path]  // none: an older one must not stay
        }
        // git must be able to read every blob the index names.
        try repo.flushObjects()
        do {
            try writeIndex(keepingLock: true)
            indexWriteFailed = false
        } catch {
            indexWriteFailed = true
        }
    }

    /// A commit that could not be made after all: its paths' index entries
    /// back as HEAD has them (the working files are put back from the
    /// journal if it never is). Best effort: the journal's recovery does the same.
    func unstageIndex(_ treeChanges: [TreeChange]) {
        guard let tree = current?.tree else { return }
        for change in treeChanges {
            if let entry = try? repo.entry(at: change.path, inTree: tree), !entry.isTree {
                pendingIndex[change.path] = .blob(path: change.path, id: entry.id)
            } else {
                pendingIndex[change.path] = .remove(path: change.path)
            }
            pendingStamps[change.path] = nil  // git reads the file again
        }
        do {
            try writeIndex(keepingLock: true)
        } catch {
            indexWriteFailed = true
        }
    }
}
