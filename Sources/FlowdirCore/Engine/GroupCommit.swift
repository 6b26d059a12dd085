/// When a held group of commits (`flowdir run`'s group commit) should go
/// before its window closes.
public enum GroupCommit {
    /// When what the run looks to have left is no more than writing the
    /// held group takes: `nodesLeft` (ready, waiting for an upstream output,
    /// or running) at `jobSeconds` each, `running` at a time, against
    /// `heldChanges` at `secondsPerChange`. The run's last big group is then
    /// written while its last jobs run, and the commit after the last job
    /// holds only what ended since (it held a window's worth: a tenth of a
    /// 1,000-step run's time). One commit more a run, not one a job.
    /// An unknown cost (0) holds until nothing is left.
    public static func isDue(nodesLeft: Int, running: Int, jobSeconds: Double,
                             heldChanges: Int, secondsPerChange: Double) -> Bool {
        guard jobSeconds > 0, heldChanges > 0 else { return false }
        let left = Double(nodesLeft) * jobSeconds / Double(max(1, running))
        return left <= 1.5 * Double(heldChanges) * secondsPerChange
    }

    /// Whether a group handed off now is written only with CPU that no job
    /// wants (`InstanceStore.commitInBackground(yielding:)`): while local
    /// jobs run and each takes less than the commit window (`window`
    /// seconds). Their history already lags by up to a window, and a core
    /// falls idle between any two of them, so the group is still written
    /// within about a job's length. Longer jobs could keep every core busy
    /// for as long as they run, and their starts would wait as long.
    public static func yieldsToJobs(localRunning: Int, jobSeconds: Double, window: Double) -> Bool {
        localRunning > 0 && jobSeconds > 0 && jobSeconds < window
    }
}
