//! The durability chain, and which failure wipes which link.
//!
//! A record travels from the application's buffer to the kernel's page cache, to the
//! drive's volatile write cache, to the stable media, and (with replication) to other
//! machines. Each place survives a different set of failures. An "OK" is only as good as
//! the last place the record had reached when the OK was sent.

/// Where a record can be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    AppBuffer,
    PageCache,
    DeviceCache,
    Media,
    OtherMachines,
}

impl Stage {
    pub const ALL: [Stage; 5] = [Stage::AppBuffer, Stage::PageCache, Stage::DeviceCache, Stage::Media, Stage::OtherMachines];

    /// The name a test reads back (`data-place`, `data-needed`).
    pub fn data_name(self) -> &'static str {
        match self {
            Stage::AppBuffer => "appbuffer",
            Stage::PageCache => "pagecache",
            Stage::DeviceCache => "devicecache",
            Stage::Media => "media",
            Stage::OtherMachines => "othermachines",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Stage::AppBuffer => "the process's buffer",
            Stage::PageCache => "the kernel's page cache",
            Stage::DeviceCache => "the drive's volatile cache",
            Stage::Media => "the stable media",
            Stage::OtherMachines => "replicas on other machines",
        }
    }
}

/// The four classes of failure an OK can be promised against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    ProcessCrash,
    KernelCrash,
    PowerLoss,
    MachineLoss,
}

impl Failure {
    pub const ALL: [Failure; 4] = [Failure::ProcessCrash, Failure::KernelCrash, Failure::PowerLoss, Failure::MachineLoss];

    pub fn label(self) -> &'static str {
        match self {
            Failure::ProcessCrash => "the process crashes",
            Failure::KernelCrash => "the kernel crashes",
            Failure::PowerLoss => "the power fails",
            Failure::MachineLoss => "the disk or machine is lost",
        }
    }

    pub fn url_name(self) -> &'static str {
        match self {
            Failure::ProcessCrash => "process",
            Failure::KernelCrash => "kernel",
            Failure::PowerLoss => "power",
            Failure::MachineLoss => "machine",
        }
    }

    pub fn example(self) -> &'static str {
        match self {
            Failure::ProcessCrash => "kill -9, a panic, an out-of-memory kill; the kernel keeps running",
            Failure::KernelCrash => "a kernel panic or a hard reset of the VM; the drive keeps its power",
            Failure::PowerLoss => "the whole machine loses power at once, drive included",
            Failure::MachineLoss => "a dead drive, a lost EBS volume or instance, a zone outage",
        }
    }
}

/// Does a record that reached `stage` survive `failure`?
pub fn survives(stage: Stage, failure: Failure) -> bool {
    match stage {
        Stage::AppBuffer => false,
        Stage::PageCache => failure == Failure::ProcessCrash,
        Stage::DeviceCache => matches!(failure, Failure::ProcessCrash | Failure::KernelCrash),
        Stage::Media => failure != Failure::MachineLoss,
        Stage::OtherMachines => true,
    }
}

/// The first place a record must reach before an OK that promises to survive `failure`.
pub fn needed_before_ok(failure: Failure) -> Stage {
    Stage::ALL.into_iter().find(|stage| survives(*stage, failure)).expect("replicas survive every failure here")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_needs_one_more_link() {
        let needed: Vec<Stage> = Failure::ALL.into_iter().map(needed_before_ok).collect();
        assert_eq!(needed, [Stage::PageCache, Stage::DeviceCache, Stage::Media, Stage::OtherMachines]);
    }

    #[test]
    fn surviving_a_failure_means_surviving_every_milder_one() {
        for stage in Stage::ALL {
            let survived: Vec<bool> = Failure::ALL.into_iter().map(|failure| survives(stage, failure)).collect();
            assert!(survived.windows(2).all(|pair| pair[0] || !pair[1]), "{stage:?}: {survived:?}");
        }
    }
}
