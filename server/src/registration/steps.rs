//! The registration's moves as a pure function of what the session holds and where the
//! bookie should be listed, so every path (first registration, read-only and back, session
//! expiry, shutdown, a step that failed halfway) is the same loop: apply `step_next` until
//! it answers `None`.

use super::znode::Place;

/// The registration znodes the current session holds (ephemeral: a new session holds none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// `ROOT/available/<id>`.
    pub available: bool,
    /// `ROOT/available/readonly/<id>`.
    pub read_only: bool,
}

impl Held {
    /// Whether `place` is held.
    #[must_use]
    pub fn get(self, place: Place) -> bool {
        match place {
            Place::Available => self.available,
            Place::ReadOnly => self.read_only,
        }
    }

    /// Records that `place` is now held (`true`) or not.
    pub fn set(&mut self, place: Place, held: bool) {
        match place {
            Place::Available => self.available = held,
            Place::ReadOnly => self.read_only = held,
        }
    }
}

/// One ZooKeeper request of the registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Create the ephemeral znode in `place`.
    Create(Place),
    /// Delete our znode in `place`.
    Delete(Place),
}

/// Where a bookie whose journals are (or are not) refusing adds is listed.
#[must_use]
pub fn place_wanted(read_only: bool) -> Place {
    if read_only {
        Place::ReadOnly
    } else {
        Place::Available
    }
}

/// The next request towards `target` (`None`: not registered at all). The target is
/// created before the other place is deleted (protocol §6.4 step 5): while it serves, the
/// bookie is never missing from both lists, only briefly in both.
#[must_use]
pub fn step_next(held: Held, target: Option<Place>) -> Option<Step> {
    match target {
        Some(place) if !held.get(place) => Some(Step::Create(place)),
        Some(place) if held.get(place.other()) => Some(Step::Delete(place.other())),
        Some(_) => None,
        None if held.available => Some(Step::Delete(Place::Available)),
        None if held.read_only => Some(Step::Delete(Place::ReadOnly)),
        None => None,
    }
}
