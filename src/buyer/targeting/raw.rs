//! `constraints` as read off the wire, before any check: strings borrowed
//! from the body where they need no unescaping, and every wrong shape kept
//! as a marker instead of failing, so validation can report each problem
//! at its path. Deserializes from JSON text and from a `serde_json::Value`
//! alike (a campaign body is read into a `Value` first), so both share one
//! reader.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A string, or something else.
#[derive(Debug)]
pub enum Str<'a> {
    Ok(Cow<'a, str>),
    NotStr,
}

/// An array of `T`, or something else.
#[derive(Debug)]
pub enum List<T> {
    Ok(Vec<T>),
    NotArray,
}

/// An area item (`{system, values}` or `{country, system, values}`).
#[derive(Debug)]
pub enum Area<'a> {
    Obj(AreaObj<'a>),
    NotObject,
}

#[derive(Debug, Default)]
pub struct AreaObj<'a> {
    pub country: Option<Str<'a>>,
    pub system: Option<Str<'a>>,
    pub values: Option<List<Str<'a>>>,
    /// Keys other than the three, in order.
    pub unknown: Vec<Cow<'a, str>>,
}

/// A value of `constraints`, by the kind its key calls for.
#[derive(Debug)]
pub enum Field<'a> {
    Strings(List<Str<'a>>),
    Areas(List<Area<'a>>),
    /// An unknown key (its value is skipped).
    Unknown,
}

/// `constraints`: its keys in order with their values, or not an object.
#[derive(Debug)]
pub enum Raw<'a> {
    Obj(Vec<(Cow<'a, str>, Field<'a>)>),
    NotObject,
}

impl<'a> Raw<'a> {
    /// The value of `key` (the last one, as JSON readers keep).
    pub fn get(&self, key: &str) -> Option<&Field<'a>> {
        match self {
            Raw::Obj(fields) => fields.iter().rev().find(|(k, _)| k == key).map(|(_, f)| f),
            Raw::NotObject => None,
        }
    }
}

/// Keys whose values are area lists; every other known key is a string list.
pub(super) const AREA_KEYS: &[&str] = &[
    "geo_metros",
    "geo_metros_exclude",
    "geo_postal_areas",
    "geo_postal_areas_exclude",
];

/// Drains what a visitor was not looking for, so the reader stays in step.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A wrong-shape visitor body: every non-matching kind becomes `$other`.
macro_rules! otherwise {
    ($other:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
    };
}

/// A key, borrowed when it can be.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Key<'a>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Str<'a>, E> {
                Ok(Str::Ok(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Str<'a>, E> {
                Ok(Str::Ok(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Str<'a>, E> {
                Ok(Str::Ok(Cow::Owned(s)))
            }
            otherwise!(Str::NotStr);
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Str<'a>, A::Error> {
                drain_seq(seq).map(|_| Str::NotStr)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Str<'a>, A::Error> {
                drain_map(map).map(|_| Str::NotStr)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E>(self, _: &str) -> Result<List<T>, E> {
                Ok(List::NotArray)
            }
            otherwise!(List::NotArray);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List<T>, A::Error> {
                // JSON text gives no length; start past the first few doublings.
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(16).min(1024));
                while let Some(item) = seq.next_element()? {
                    out.push(item);
                }
                Ok(List::Ok(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<List<T>, A::Error> {
                drain_map(map).map(|_| List::NotArray)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Area<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Area<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E>(self, _: &str) -> Result<Area<'a>, E> {
                Ok(Area::NotObject)
            }
            otherwise!(Area::NotObject);
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Area<'a>, A::Error> {
                drain_seq(seq).map(|_| Area::NotObject)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Area<'a>, A::Error> {
                let mut obj = AreaObj::default();
                while let Some(Key(k)) = map.next_key()? {
                    match &*k {
                        "country" => obj.country = Some(map.next_value()?),
                        "system" => obj.system = Some(map.next_value()?),
                        "values" => obj.values = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            obj.unknown.push(k);
                        }
                    }
                }
                Ok(Area::Obj(obj))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Raw<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Raw<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E>(self, _: &str) -> Result<Raw<'a>, E> {
                Ok(Raw::NotObject)
            }
            otherwise!(Raw::NotObject);
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Raw<'a>, A::Error> {
                drain_seq(seq).map(|_| Raw::NotObject)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw<'a>, A::Error> {
                let mut fields = Vec::new();
                while let Some(Key(k)) = map.next_key()? {
                    let field = if AREA_KEYS.contains(&&*k) {
                        Field::Areas(map.next_value()?)
                    } else if super::constraints::FIELDS.contains(&&*k) {
                        Field::Strings(map.next_value()?)
                    } else {
                        map.next_value::<IgnoredAny>()?;
                        Field::Unknown
                    };
                    fields.push((k, field));
                }
                Ok(Raw::Obj(fields))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// What a read found, as text, borrowed or not.
    fn shape(field: Option<&Field>) -> String {
        format!("{field:?}")
            .replace("Borrowed(", "Cow(")
            .replace("Owned(", "Cow(")
    }

    #[test]
    fn text_and_value_read_alike_borrowing_what_needs_no_unescaping() {
        let text = r#"{"geo_countries": ["US", "G\u0042", 7, null, ["x"], {"a": 1}],
            "geo_metros": [{"system": "nielsen_dma", "values": ["501"], "x": {"y": [1]}}, "oops"],
            "language": "en", "mystery": {"deep": [1, 2, {"z": null}]},
            "geo_postal_areas": {"country": "US"}}"#;
        let raw: Raw = serde_json::from_str(text).unwrap();
        let Raw::Obj(fields) = &raw else {
            panic!("an object")
        };
        assert_eq!(fields.len(), 5);
        let Some(Field::Strings(List::Ok(items))) = raw.get("geo_countries") else {
            panic!("a list")
        };
        assert!(matches!(&items[0], Str::Ok(Cow::Borrowed("US"))));
        assert!(matches!(&items[1], Str::Ok(Cow::Owned(s)) if s == "GB"));
        assert!(items[2..].iter().all(|i| matches!(i, Str::NotStr)));
        let Some(Field::Areas(List::Ok(areas))) = raw.get("geo_metros") else {
            panic!("areas")
        };
        let Area::Obj(obj) = &areas[0] else {
            panic!("an area")
        };
        assert_eq!(obj.unknown, vec!["x"]);
        assert!(matches!(areas[1], Area::NotObject));
        assert!(matches!(
            raw.get("language"),
            Some(Field::Strings(List::NotArray))
        ));
        assert!(matches!(raw.get("mystery"), Some(Field::Unknown)));
        assert!(matches!(
            raw.get("geo_postal_areas"),
            Some(Field::Areas(List::NotArray))
        ));
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        let from_value = Raw::deserialize(&value).unwrap();
        // A Value keeps its keys sorted; compare key by key.
        for (k, _) in fields {
            assert_eq!(shape(raw.get(k)), shape(from_value.get(k)));
        }
        assert!(matches!(
            serde_json::from_str::<Raw>("[1]").unwrap(),
            Raw::NotObject
        ));
    }
}
