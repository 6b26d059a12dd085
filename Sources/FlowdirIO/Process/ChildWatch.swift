#if canImport(Glibc)
import Glibc
#endif
import CFlowdirSys
import Synchronization

/// Three threads serve every local job: two start them (`spawn`), one waits
/// on all of them at once, with epoll over each job's pidfd and output pipe:
/// output goes to the job's log as it comes (`progress:` lines reported),
/// and the job's end is handed back once it has exited, its group is swept
/// and its output is read. No thread, task or timer per job: at a thousand
/// short jobs a second, each hop between threads is a tenth of what a job
/// costs. Spawning has threads of its own because starting a job holds its
/// caller until the child has exec'd (0.1–2 ms on a busy machine): on
/// Swift's cooperative pool, which has a thread per core, that stalled the
/// engine. Two spawn, so that one job whose child waits for a CPU before it
/// execs (a fifth of them wait 0.6–1 ms on a busy machine: a new process
/// queues behind what already runs there) does not hold up the next job's
/// start, leaving its slot idle.
public final class ChildWatch: @unchecked Sendable {
    static let shared = ChildWatch()

    /// A running job. Everything but `ended` and `failure` is touched only on the watch
    /// thread once the job is handed to `watch`.
    final class Job: @unchecked Sendable {
        let pid: pid_t
        let pidfd: Int32
        fileprivate var pipe: Int32
        /// The pipe's write end, kept open by flowdir until the job is
        /// reaped: the job's exit then makes no end-of-file to wake the
        /// watching thread for, only its pidfd does (one wakeup a job, not two).
        fileprivate var writeEnd: Int32
        fileprivate let log: BoundedLog
        fileprivate let onProgress: @Sendable (Double) -> Void
        fileprivate var line: [UInt8] = []
        fileprivate var onExit: (@Sendable (LocalTermination, [UInt8]?) -> Void)?
        /// Reaped: its pid may belong to someone else now. Under `ChildWatch.state`'s lock.
        fileprivate var ended = false
        /// Why flowdir stopped it, if it did. Under `ChildWatch.state`'s lock.
        fileprivate var failure: String?

        init(pid: pid_t, pidfd: Int32, pipe: Int32, writeEnd: Int32 = -1, log: BoundedLog,
             onProgress: @escaping @Sendable (Double) -> Void,
             onExit: @escaping @Sendable (LocalTermination, [UInt8]?) -> Void) {
            self.pid = pid
            self.pidfd = pidfd
            self.pipe = pipe
            self.writeEnd = writeEnd
            self.log = log
            self.onProgress = onProgress
            self.onExit = onExit
        }
    }

    /// The jobs watched, by pidfd; and work for the spawning threads, in order (`pending` counts it).
    private let state = Mutex<(jobs: [Int32: Job], queue: [@Sendable () -> Void])>(([:], []))
    private let epoll: Result<Int32, Errno>
    /// At a fixed address of its own: a `sem_t` stored in a property and
    /// passed as `&x` is an access to that property, which the optimizer
    /// may widen across the wait (another thread's post then traps as a conflict).
    private let pending = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

    private init() {
        epoll = Syscall.retrying({ epoll_create1(Int32(EPOLL_CLOEXEC)) }, failed: { $0 < 0 })
        sem_init(pending, 0, 0)
        // `shared` lives as long as the process: the threads never end.
        Self.thread(self, "flowdir-wait") { $0.loop() }
        for _ in 0..<Self.spawners { Self.thread(self, "flowdir-spawn") { $0.spawnLoop() } }
    }

    /// Threads that start jobs.
    static let spawners = 2

    /// The time slice asked for by the threads a job's end goes through.
    static let slice: UInt64 = 100_000

    /// Asks a short time slice for the calling thread, once (see `flowdir_short_slice`).
    public static func askShortSlice() { flowdir_short_slice_once(slice) }

    /// The threads' names, as `top -H`, `perf` and /proc show them.
    static let threadNames = ["flowdir-wait", "flowdir-spawn"]

    /// For a program whose only child processes are flowdir's jobs (the
    /// `flowdir` executable); set before the first job. A job's exit sends
    /// SIGCHLD to the thread that spawned it; blocked there (as on the
    /// pool thread it was made from), the kernel queues it and wakes
    /// another thread to discard it: a wakeup per job. Unblocked, at its
    /// default disposition, it is dropped where it is sent. Not the
    /// default: a program that also waits for children through SIGCHLD
    /// (Foundation's `Process` does) would miss theirs.
    /// SIGCHLD must stay at its default then (no handler anywhere).
    nonisolated(unsafe) public static var dropsChildSignals = false
    /// `dropsChildSignals` when the threads were made: they hold it for good.
    let spawnersMasked = ChildWatch.dropsChildSignals

    private static func thread(_ me: ChildWatch, _ name: String, _ body: @escaping (ChildWatch) -> Void) {
        final class Start { let me: ChildWatch, name: String, body: (ChildWatch) -> Void
            init(_ me: ChildWatch, _ name: String, _ body: @escaping (ChildWatch) -> Void) { self.me = me; self.name = name; self.body = body } }
        var thread = pthread_t()
        pthread_create(&thread, nil, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            _ = pthread_setname_np(pthread_self(), start.name)
            if start.me.spawnersMasked {
                // Every signal blocked for good but SIGCHLD (dropped where it
                // is sent, not woken for elsewhere) and the faults a bug of
                // this thread's own raises (left to the crash report): a spawn
                // then leaves the mask alone (see `flowdir_spawn_start`).
                var mask = sigset_t()
                sigfillset(&mask)
                for signal in [SIGCHLD, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS] { sigdelset(&mask, signal) }
                pthread_sigmask(SIG_SETMASK, &mask, nil)
            }
            _ = flowdir_short_slice(ChildWatch.slice)
            start.body(start.me)
            return nil
        }, Unmanaged.passRetained(Start(me, name, body)).toOpaque())
        pthread_detach(thread)
    }

    /// Runs `work` (a job's spawn) on a spawning thread, once what was handed in before has been taken up.
    func spawn(_ work: @escaping @Sendable () -> Void) {
        state.withLock { $0.queue.append(work) }
        sem_post(pending)
    }

    private func spawnLoop() {
        while true {
            guard sem_wait(pending) == 0 else { continue }  // EINTR
            let work = state.withLock { $0.queue.removeFirst() }
            work()
        }
    }

    /// Watches `job` until it ends, when its `onExit` is called (on the
    /// watching thread; on the caller's, if the job cannot be watched).
    func watch(_ job: Job) {
        state.withLock { $0.jobs[job.pidfd] = job }
        // Its exit first: until that is watched, no other thread knows the job.
        if case .failure(let e) = epoll.flatMap({ Self.add($0, job.pidfd, tag: UInt64(job.pidfd) << 1) }) {
            // It cannot be waited for: ended now rather than left running unseen.
            state.withLock { job.ended = true; $0.jobs[job.pidfd] = nil }
            _ = killpg(job.pid, SIGKILL)
            var info = siginfo_t()
            _ = Syscall.retrying({ waitid(flowdir_P_PIDFD, id_t(job.pidfd), &info, WEXITED) }, failed: { $0 != 0 })
            Syscall.close(job.pidfd)
            job.log.append(Array("flowdir: cannot wait for the job: \(e)\n".utf8))
            finish(job, .spawnFailed("cannot wait for the job: \(e)"))
            return
        }
        if case .failure(let e) = epoll.flatMap({ Self.add($0, job.pipe, tag: UInt64(job.pidfd) << 1 | 1) }) {
            // Its output cannot be read as it comes: stopped, and said so when it ends.
            state.withLock { _ in
                job.failure = "cannot read its output: \(e)"
                if !job.ended { _ = killpg(job.pid, SIGKILL) }
            }
        }
    }

    /// Sends `signal` to the job's process group, unless it has ended.
    func signal(_ job: Job, _ signal: Int32) {
        state.withLock { _ in if !job.ended { _ = killpg(job.pid, signal) } }
    }

    private static func add(_ epfd: Int32, _ fd: Int32, tag: UInt64) -> Result<Void, Errno> {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = tag
        return Syscall.retrying({ epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) }, failed: { $0 != 0 }).map { _ in }
    }

    private func loop() {
        guard case .success(let epfd) = epoll else { return }
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = events.withUnsafeMutableBufferPointer { epoll_wait(epfd, $0.baseAddress, Int32($0.count), -1) }
            guard n > 0 else { continue }  // EINTR
            for event in events[0..<Int(n)] {
                let tag = event.data.u64
                // An event may outlive its job within one batch (and its fd
                // number be reused since): both handlers below are harmless
                // when nothing is there.
                guard let job = state.withLock({ $0.jobs[Int32(truncatingIfNeeded: tag >> 1)] }) else { continue }
                if tag & 1 == 1 {
                    read(job, into: &buffer)
                } else if let end = reap(job) {
                    read(job, into: &buffer)  // what it wrote before it exited
                    closePipe(job)
                    _ = epoll_ctl(epfd, EPOLL_CTL_DEL, job.pidfd, nil)
                    Syscall.close(job.pidfd)
                    finish(job, end)
                }
            }
        }
    }

    /// How the job ended, if it has: its group is swept first, while the
    /// leader is a zombie and its pid (the group's id) cannot be reused.
    private func reap(_ job: Job) -> LocalTermination? {
        state.withLock { state in
            guard !job.ended else { return nil }
            var info = siginfo_t()
            let peek = waitid(flowdir_P_PIDFD, id_t(job.pidfd), &info, WEXITED | WNOHANG | WNOWAIT)
            guard peek == 0, flowdir_siginfo_pid(&info) != 0 else { return nil }
            // Nothing of its group may outlive it. (Not at end of output:
            // many tools close stdout before they exit.)
            _ = killpg(job.pid, SIGKILL)
            _ = Syscall.retrying({ waitid(flowdir_P_PIDFD, id_t(job.pidfd), &info, WEXITED) }, failed: { $0 != 0 })
            job.ended = true
            state.jobs[job.pidfd] = nil
            if let why = job.failure {
                job.log.append(Array("flowdir: \(why)\n".utf8))
                return .spawnFailed(why)
            }
            let status = flowdir_siginfo_status(&info)
            return info.si_code == CLD_EXITED ? .exited(status) : .signaled(status)
        }
    }

    /// Reads what the pipe holds now into the log; closes it at its end.
    private func read(_ job: Job, into buffer: inout [UInt8]) {
        while job.pipe >= 0 {
            let result = buffer.withUnsafeMutableBytes { Syscall.read(job.pipe, into: $0) }
            switch result {
            case .success(0), .failure:  // its end (or EAGAIN: nothing more for now)
                if case .failure(let e) = result, e.code == EAGAIN { return }
                closePipe(job)
            case .success(let count):
                output(job, buffer[..<count])
            }
        }
    }

    private func output(_ job: Job, _ bytes: ArraySlice<UInt8>) {
        job.log.append(Array(bytes))
        job.line += bytes
        while let nl = job.line.firstIndex(of: 0x0A) {
            if let p = Progress.parse(job.line[..<nl]) { job.onProgress(p) }
            job.line.removeSubrange(...nl)
        }
        if job.line.count > 4096 { job.line.removeAll() }  // a very long line carries no progress
    }

    private func closePipe(_ job: Job) {
        if job.writeEnd >= 0 {
            Syscall.close(job.writeEnd)
            job.writeEnd = -1
        }
        guard job.pipe >= 0 else { return }
        if case .success(let epfd) = epoll { _ = epoll_ctl(epfd, EPOLL_CTL_DEL, job.pipe, nil) }
        Syscall.close(job.pipe)
        job.pipe = -1
    }

    private func finish(_ job: Job, _ end: LocalTermination) {
        closePipe(job)
        let log = job.log.close()
        let onExit = job.onExit
        job.onExit = nil
        onExit?(end, log)
    }
}
