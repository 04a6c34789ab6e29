//! Measures each candidate decoder against cv2.imdecode(IMREAD_COLOR) (OpenCV 4.9.0.80) on a
//! directory of images, and times them. Reference pixels come from tools/reference/dump_decoded.py:
//!
//! ```sh
//! /work/venvs/image/bin/python tools/reference/dump_decoded.py ../shared/data/deepface /tmp/cv2ref/deepface
//! cargo run --release -p facecompute-core --example decoder_parity -- ../shared/data/deepface /tmp/cv2ref/deepface
//! ```
//!
//! Prints, per decoder: files decoded, files with any difference, max and mean absolute difference
//! over all channels of all pixels, and total decode time.

use facecompute_core::image::{decode, ChannelOrder, DecodeLimits};
use std::io::Cursor;
use std::time::{Duration, Instant};

type Decoder = fn(&[u8]) -> Option<(u32, u32, Vec<u8>)>;

fn ours(b: &[u8]) -> Option<(u32, u32, Vec<u8>)> {
    let img = decode(b, DecodeLimits { max_bytes: usize::MAX, max_pixels: u64::MAX }, ChannelOrder::Bgr).ok()?;
    Some((img.width, img.height, img.data))
}

fn rgb_to_bgr(px: Vec<u8>, channels: usize) -> Vec<u8> {
    px.chunks_exact(channels)
        .flat_map(|p| if channels >= 3 { [p[2], p[1], p[0]] } else { [p[0]; 3] })
        .collect()
}

fn zune(b: &[u8]) -> Option<(u32, u32, Vec<u8>)> {
    use zune_jpeg5::zune_core::{bytestream::ZCursor, colorspace::ColorSpace, options::DecoderOptions};
    if !b.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let opts = DecoderOptions::default().jpeg_set_out_colorspace(ColorSpace::BGR);
    let mut d = zune_jpeg5::JpegDecoder::new_with_options(ZCursor::new(b), opts);
    let px = d.decode().ok()?;
    let (w, h) = d.dimensions()?;
    Some((w as u32, h as u32, px))
}

fn jpeg_decoder(b: &[u8]) -> Option<(u32, u32, Vec<u8>)> {
    if !b.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    let mut d = jpeg_decoder::Decoder::new(Cursor::new(b));
    let px = d.decode().ok()?;
    let info = d.info()?;
    let ch = match info.pixel_format {
        jpeg_decoder::PixelFormat::L8 => 1,
        jpeg_decoder::PixelFormat::RGB24 => 3,
        _ => return None,
    };
    Some((info.width as u32, info.height as u32, rgb_to_bgr(px, ch)))
}

fn image_webp(b: &[u8]) -> Option<(u32, u32, Vec<u8>)> {
    let mut d = image_webp::WebPDecoder::new(Cursor::new(b)).ok()?;
    let (w, h) = d.dimensions();
    let ch = if d.has_alpha() { 4 } else { 3 };
    let mut px = vec![0; d.output_buffer_size()?];
    d.read_image(&mut px).ok()?;
    Some((w, h, rgb_to_bgr(px, ch)))
}

#[derive(Default)]
struct Stats {
    files: usize,
    differing: usize,
    max: u8,
    sum: u64,
    n: u64,
    time: Duration,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (src, refdir) = (&args[1], &args[2]);
    let index = std::fs::read_to_string(format!("{refdir}/index.tsv")).expect("index.tsv");
    let decoders: [(&str, Decoder); 4] =
        [("libjpeg-turbo+libwebp (ours)", ours), ("zune-jpeg", zune), ("jpeg-decoder", jpeg_decoder), ("image-webp", image_webp)];
    let mut stats: Vec<Stats> = decoders.iter().map(|_| Stats::default()).collect();
    for line in index.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 4 || f[3] == "-" {
            continue;
        }
        let bytes = std::fs::read(format!("{src}/{}", f[0])).expect("image");
        let reference = std::fs::read(format!("{refdir}/{}", f[3])).expect("reference");
        let (w, h): (u32, u32) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        for ((name, dec), st) in decoders.iter().zip(stats.iter_mut()) {
            let t = Instant::now();
            let out = dec(&bytes);
            let el = t.elapsed();
            let Some((dw, dh, px)) = out else { continue };
            if (dw, dh) != (w, h) || px.len() != reference.len() {
                println!("{name}: {} has size {dw}x{dh}, OpenCV {w}x{h}", f[0]);
                continue;
            }
            st.files += 1;
            st.time += el;
            let mut file_max = 0u8;
            for (a, b) in px.iter().zip(&reference) {
                let d = a.abs_diff(*b);
                file_max = file_max.max(d);
                st.sum += d as u64;
            }
            st.n += px.len() as u64;
            st.max = st.max.max(file_max);
            st.differing += (file_max > 0) as usize;
            if file_max > 0 && std::env::var_os("VERBOSE").is_some() {
                println!("{name}: {} max diff {file_max}", f[0]);
            }
        }
    }
    println!("| decoder | files | files differing | max abs diff | mean abs diff | decode time (s) |");
    println!("|---|---|---|---|---|---|");
    for ((name, _), st) in decoders.iter().zip(&stats) {
        if st.files == 0 {
            continue;
        }
        println!(
            "| {name} | {} | {} | {} | {:.5} | {:.3} |",
            st.files,
            st.differing,
            st.max,
            st.sum as f64 / st.n.max(1) as f64,
            st.time.as_secs_f64()
        );
    }
}
