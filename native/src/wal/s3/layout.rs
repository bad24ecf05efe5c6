//! The object-store WAL's layout is pure and lives in the core
//! ([`walab_core::remote::layout`]: keys, the registration, `plan_chain`); this edge adds
//! only the registration's bytes, pretty JSON with a trailing newline.

pub use walab_core::remote::layout::*;

/// The registration object's body as bytes, and back (checked with
/// [`Registration::check`]).
pub trait RegistrationJson: Sized {
    fn to_bytes(&self) -> Vec<u8>;
    fn from_bytes(bytes: &[u8]) -> Result<Self, String>;
}

impl RegistrationJson for Registration {
    fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("plain data serializes");
        bytes.push(b'\n');
        bytes
    }

    fn from_bytes(bytes: &[u8]) -> Result<Registration, String> {
        let registration: Registration = serde_json::from_slice(bytes)
            .map_err(|error| format!("registration is not walab's: {error}"))?;
        registration.check().map_err(|error| error.to_string())?;
        Ok(registration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registration_round_trips_and_rejects_nonsense() {
        let mut registration = Registration::unclaimed();
        registration.epoch = 2;
        registration.owner = "abc".into();
        registration.sessions = vec![
            Session {
                epoch: 1,
                start_offset: 0,
                first_seq: 1,
            },
            Session {
                epoch: 2,
                start_offset: 500,
                first_seq: 9,
            },
        ];
        assert_eq!(
            Registration::from_bytes(&registration.to_bytes()),
            Ok(registration.clone())
        );
        registration.sessions.swap(0, 1);
        assert!(Registration::from_bytes(&registration.to_bytes())
            .unwrap_err()
            .contains("backwards"));
        assert!(Registration::from_bytes(b"{}").is_err());
    }
}
