import FlowdirCore

/// Shutdown, one path for `flowdir run` (Ctrl-C, SIGTERM) and `flowdir
/// watch`: nothing new starts; this machine's jobs get a grace period to
/// end, then are stopped and recorded as stopped by flowdir (ready again,
/// run again next time); remote jobs go on where they run, and the next
/// start reattaches them.
extension Engine {
    /// Asks the loop to stop.
    public func stop() {
        deliver(.stop)
    }

    /// Starts stopping: returns `false` if it had started already.
    func beginStopping(grace: Double) -> Bool {
        guard !stopping else { return false }
        stopping = true
        starting = false
        if grace == 0 {
            stopRunningJobs()
        } else if !running.isEmpty {
            let clock = self.clock
            Task { [weak self] in
                try? await clock.sleep(seconds: grace)
                await self?.stopRunningJobs()
            }
        }
        return true
    }

    /// Stopping, and nothing of this machine's runs any more: the loop may end.
    var stoppedRunning: Bool {
        stopping && running.values.allSatisfy { $0.spec?.work.isRemote ?? false }
    }

    /// Grace is over: what still runs here is stopped, and runs again next time.
    func stopRunningJobs() {
        for (key, job) in running {
            // A remote job goes on where it runs: the next start reattaches it.
            if job.spec?.work.isRemote ?? false { continue }
            running[key]?.cancelReason = Engine.shutdownReason
            job.handle.cancel()
        }
    }

    static let shutdownReason = "flowdir stopped while it ran"
}
