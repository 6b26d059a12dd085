#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import Foundation

/// A program run with pipes: bytes or a file as its stdin, its stdout
/// streamed to a handler or collected, its stderr kept; for transfers
/// (ssh, git's credential helpers) whose output may be large.
public enum PipedCommand {
    public enum Input: Sendable {
        case none
        case bytes([UInt8])
        case file(String)
    }

    public struct Result: Sendable {
        public var status: Int32
        public var output: String
        public var errors: String
    }

    /// Runs `argv` (its first word a path) with `input` as stdin; `output`,
    /// when given, gets stdout in pieces as it comes (else it is collected,
    /// up to 16 MiB); stderr is kept (64 KiB). `environment` adds to this process's.
    public static func run(_ argv: [String], input: Input, output handler: ((UnsafeRawBufferPointer) -> Void)? = nil,
                           environment: [String: String] = [:]) async -> Result {
        // The handler runs on the spawning thread while the caller waits for it: never at once with the caller.
        let sink = UncheckedHandler(handler)
        return await withCheckedContinuation { (done: CheckedContinuation<Result, Never>) in
            Thread.detachNewThread {
                done.resume(returning: runBlocking(argv, input: input, output: sink.handler, environment: environment))
            }
        }
    }

    static func runBlocking(_ argv: [String], input: Input, output handler: ((UnsafeRawBufferPointer) -> Void)?,
                            environment: [String: String]) -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0])
        process.arguments = Array(argv.dropFirst())
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        var feeder: Thread?
        switch input {
        case .none: process.standardInput = FileHandle.nullDevice
        case .file(let path):
            guard let h = FileHandle(forReadingAtPath: path) else {
                return Result(status: 2, output: "", errors: "cannot read \(path)")
            }
            process.standardInput = h
        case .bytes(let bytes):
            let pipe = Pipe()
            process.standardInput = pipe
            feeder = Thread {
                pipe.fileHandleForWriting.write(Data(bytes))
                try? pipe.fileHandleForWriting.close()
            }
        }
        do { try process.run() } catch {
            return Result(status: 127, output: "", errors: "cannot run \(argv[0]): \(error)")
        }
        feeder?.start()
        // stderr on its own thread: a chatty ssh must not block on a full pipe.
        let errors = Locked<[UInt8]>([])
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let data = err.fileHandleForReading.readDataToEndOfFile()
            errors.locked { $0 = Array(data.prefix(64 << 10)) }
            finished.signal()
        }
        var collected: [UInt8] = []
        let fd = out.fileHandleForReading.fileDescriptor
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer.baseAddress, buffer.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            if let handler { handler(chunk) } else if collected.count < 16 << 20 { collected += chunk }
        }
        process.waitUntilExit()
        finished.wait()
        let status = process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
        return Result(status: status, output: String(decoding: collected, as: UTF8.self),
                      errors: String(decoding: errors.locked { $0 }, as: UTF8.self))
    }
}

private struct UncheckedHandler: @unchecked Sendable {
    let handler: ((UnsafeRawBufferPointer) -> Void)?
    init(_ h: ((UnsafeRawBufferPointer) -> Void)?) { handler = h }
}
