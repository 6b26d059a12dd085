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
}
