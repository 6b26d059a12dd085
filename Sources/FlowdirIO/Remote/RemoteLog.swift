import FlowdirCore

/// A remote job's logs in its run's `log.txt`, and what they say of progress.
enum RemoteLog {
    /// The backend sends the whole log each time: the file is replaced,
    /// keeping its start and its newest end when it is long.
    static func write(_ logs: String, to path: String) {
        var bytes = Array(logs.utf8)
        let limit = 1 << 20
        if bytes.count > limit {
            bytes = Array(bytes.prefix(limit / 4)) + Array("\n… (flowdir kept the start and the end of this log)\n".utf8)
                + Array(bytes.suffix(limit * 3 / 4))
        }
        try? Files.makeDirectories(Path.directory(of: path))
        try? Files.writeAtomically(path, bytes)
    }

    /// The newest progress a line of the log gives: flowdir's own
    /// `progress: 0.4` lines, or a progress bar's `42%|` as cog's tqdm prints.
    static func lastProgress(_ logs: String) -> Double? {
        for line in logs.utf8.split(whereSeparator: { $0 == 10 || $0 == 13 }).reversed() {
            if let p = Progress.parse(line) { return p }
            if let bar = line.firstIndex(of: UInt8(ascii: "%")), line[line.index(after: bar)...].first == UInt8(ascii: "|") {
                let digits = line[..<bar].reversed().prefix { $0 >= 48 && $0 <= 57 }
                if !digits.isEmpty, let n = Double(String(decoding: digits.reversed(), as: UTF8.self)), n <= 100 { return n / 100 }
            }
        }
        return nil
    }
}
